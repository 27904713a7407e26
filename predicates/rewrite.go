package predicates

import (
	"fmt"
	"strconv"

	"go.starlark.net/syntax"
)

// Starlark evaluates x + y, x * y and x % y, and looks up methods, inside
// its interpreter, with no hook to check what they allocate: "x" * n makes
// up to a gigabyte in one step and s = s + s doubles at every step. So a
// script's syntax tree is rewritten before it is compiled: those
// operators become calls of budgeted built-ins (sandbox.go), x op= y
// becomes x op= ·op=(x, y) (which checks x op y and returns y), and
// x.join and the other guarded methods become ·.(x, "join"). Positions
// are kept, so errors point where they did.

var binaryOps = map[syntax.Token]string{syntax.PLUS: opPlus, syntax.STAR: opStar, syntax.PERCENT: opPercent}

var augOps = map[syntax.Token]string{syntax.PLUS_EQ: opAugPlus, syntax.STAR_EQ: opAugStar, syntax.PERCENT_EQ: opAugPercent}

type rewriter struct{ temps int }

func guardFile(f *syntax.File) {
	rw := &rewriter{}
	f.Stmts = rw.stmts(f.Stmts)
}

func guardExpr(e syntax.Expr) syntax.Expr { return (&rewriter{}).expr(e) }

func call(name string, pos syntax.Position, args ...syntax.Expr) *syntax.CallExpr {
	return &syntax.CallExpr{Fn: &syntax.Ident{NamePos: pos, Name: name}, Lparen: pos, Args: args, Rparen: pos}
}

func (rw *rewriter) stmts(ss []syntax.Stmt) []syntax.Stmt {
	var out []syntax.Stmt
	for _, s := range ss {
		out = append(out, rw.stmt(s)...)
	}
	return out
}

func (rw *rewriter) stmt(s syntax.Stmt) []syntax.Stmt {
	switch s := s.(type) {
	case *syntax.AssignStmt:
		if name, ok := augOps[s.Op]; ok {
			lhs, pre := rw.hoist(s.LHS)
			s.LHS = lhs
			s.RHS = call(name, s.OpPos, reread(lhs), rw.expr(s.RHS))
			return append(pre, s)
		}
		s.LHS = rw.target(s.LHS)
		s.RHS = rw.expr(s.RHS)
	case *syntax.DefStmt:
		rw.params(s.Params)
		s.Body = rw.stmts(s.Body)
	case *syntax.ExprStmt:
		s.X = rw.expr(s.X)
	case *syntax.ForStmt:
		s.Vars = rw.target(s.Vars)
		s.X = rw.expr(s.X)
		s.Body = rw.stmts(s.Body)
	case *syntax.WhileStmt:
		s.Cond = rw.expr(s.Cond)
		s.Body = rw.stmts(s.Body)
	case *syntax.IfStmt:
		s.Cond = rw.expr(s.Cond)
		s.True = rw.stmts(s.True)
		s.False = rw.stmts(s.False)
	case *syntax.ReturnStmt:
		s.Result = rw.expr(s.Result)
	}
	return []syntax.Stmt{s}
}

func (rw *rewriter) params(ps []syntax.Expr) {
	for _, p := range ps {
		if b, ok := p.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
			b.Y = rw.expr(b.Y) // a default value
		}
	}
}

// target rewrites the expressions inside an assignment target, not the
// target itself.
func (rw *rewriter) target(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case *syntax.IndexExpr:
		e.X, e.Y = rw.expr(e.X), rw.expr(e.Y)
	case *syntax.DotExpr:
		e.X = rw.expr(e.X)
	case *syntax.ParenExpr:
		e.X = rw.target(e.X)
	case *syntax.TupleExpr:
		for i := range e.List {
			e.List[i] = rw.target(e.List[i])
		}
	case *syntax.ListExpr:
		for i := range e.List {
			e.List[i] = rw.target(e.List[i])
		}
	}
	return e
}

// hoist prepares an augmented assignment's target to be read twice (once
// for the check, once by the assignment): operands that are not plain
// names or literals are evaluated once, into temporaries, first.
func (rw *rewriter) hoist(e syntax.Expr) (syntax.Expr, []syntax.Stmt) {
	var pre []syntax.Stmt
	temp := func(x syntax.Expr) syntax.Expr {
		x = rw.expr(x)
		switch x.(type) {
		case *syntax.Ident, *syntax.Literal:
			return x
		}
		pos, _ := x.Span()
		name := fmt.Sprintf("·t%d", rw.temps)
		rw.temps++
		pre = append(pre, &syntax.AssignStmt{OpPos: pos, Op: syntax.EQ, LHS: &syntax.Ident{NamePos: pos, Name: name}, RHS: x})
		return &syntax.Ident{NamePos: pos, Name: name}
	}
	switch x := e.(type) {
	case *syntax.ParenExpr:
		return rw.hoist(x.X)
	case *syntax.IndexExpr:
		x.X = temp(x.X)
		x.Y = temp(x.Y)
	case *syntax.DotExpr:
		x.X = temp(x.X)
	}
	return e, pre
}

// reread is a fresh copy of a hoisted target, to read it.
func reread(e syntax.Expr) syntax.Expr {
	switch x := e.(type) {
	case *syntax.Ident:
		return &syntax.Ident{NamePos: x.NamePos, Name: x.Name}
	case *syntax.IndexExpr:
		return &syntax.IndexExpr{X: reread(x.X), Lbrack: x.Lbrack, Y: reread(x.Y), Rbrack: x.Rbrack}
	case *syntax.DotExpr:
		return &syntax.DotExpr{X: reread(x.X), Dot: x.Dot, NamePos: x.NamePos, Name: &syntax.Ident{NamePos: x.Name.NamePos, Name: x.Name.Name}}
	case *syntax.Literal:
		c := *x
		return &c
	}
	return e // the parser allows nothing else as an augmented target
}

func (rw *rewriter) exprs(es []syntax.Expr) {
	for i := range es {
		es[i] = rw.expr(es[i])
	}
}

func (rw *rewriter) expr(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case nil:
		return nil
	case *syntax.BinaryExpr:
		e.X, e.Y = rw.expr(e.X), rw.expr(e.Y)
		if name, ok := binaryOps[e.Op]; ok {
			return call(name, e.OpPos, e.X, e.Y)
		}
	case *syntax.CallExpr:
		e.Fn = rw.expr(e.Fn)
		for i, a := range e.Args {
			if b, ok := a.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
				b.Y = rw.expr(b.Y) // name=value: the name stays
				continue
			}
			e.Args[i] = rw.expr(a)
		}
	case *syntax.DotExpr:
		e.X = rw.expr(e.X)
		if guardedMethods[e.Name.Name] {
			name := &syntax.Literal{Token: syntax.STRING, TokenPos: e.NamePos, Raw: strconv.Quote(e.Name.Name), Value: e.Name.Name}
			return call(opAttr, e.Dot, e.X, name)
		}
	case *syntax.Comprehension:
		for _, cl := range e.Clauses {
			switch cl := cl.(type) {
			case *syntax.ForClause:
				cl.Vars = rw.target(cl.Vars)
				cl.X = rw.expr(cl.X)
			case *syntax.IfClause:
				cl.Cond = rw.expr(cl.Cond)
			}
		}
		e.Body = rw.expr(e.Body)
	case *syntax.CondExpr:
		e.Cond, e.True, e.False = rw.expr(e.Cond), rw.expr(e.True), rw.expr(e.False)
	case *syntax.DictExpr:
		rw.exprs(e.List)
	case *syntax.DictEntry:
		e.Key, e.Value = rw.expr(e.Key), rw.expr(e.Value)
	case *syntax.IndexExpr:
		e.X, e.Y = rw.expr(e.X), rw.expr(e.Y)
	case *syntax.LambdaExpr:
		rw.params(e.Params)
		e.Body = rw.expr(e.Body)
	case *syntax.ListExpr:
		rw.exprs(e.List)
	case *syntax.TupleExpr:
		rw.exprs(e.List)
	case *syntax.ParenExpr:
		e.X = rw.expr(e.X)
	case *syntax.SliceExpr:
		e.X, e.Lo, e.Hi, e.Step = rw.expr(e.X), rw.expr(e.Lo), rw.expr(e.Hi), rw.expr(e.Step)
	case *syntax.UnaryExpr:
		e.X = rw.expr(e.X)
	}
	return e
}
