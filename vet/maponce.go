package vet

import (
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/types/typeutil"
)

// A range over a map that looks for one entry and, on finding it, acts
// once and leaves ("if any transaction is still prepared, arm the inquiry
// timer") does the same whichever entry the map yields first: the effect
// happens when some entry qualifies, at most once, with arguments that do
// not come from the entry. orderFreeOnce recognises that shape, so vet
// does not ask for sorted keys where they change nothing.
//
// It is deliberately narrow. The loop must have exactly one statement
// that leaves it (a return, or a break of this loop), since with two the
// order decides which one is taken; the effect must lead straight to it,
// past no branch and no if that reads the entry; the effect's arguments
// may name neither the loop's variables nor anything declared or written
// in its body; and the loop may keep nothing of the entry, nor call
// anything whose writes vet cannot see.

// rangeExits finds the statements of rs's body that leave the loop. ok is
// false when the body has a jump vet does not follow (a labelled break or
// continue, a goto).
func rangeExits(rs *ast.RangeStmt) (exits []ast.Stmt, ok bool) {
	ok = true
	var walk func(n ast.Node, breakable bool)
	walk = func(n ast.Node, breakable bool) {
		ast.Inspect(n, func(m ast.Node) bool {
			switch m := m.(type) {
			case *ast.FuncLit:
				return false // its returns are its own
			case *ast.ReturnStmt:
				exits = append(exits, m)
			case *ast.BranchStmt:
				switch {
				case m.Label != nil || m.Tok == token.GOTO:
					ok = false
				case m.Tok == token.BREAK && breakable:
					exits = append(exits, m)
				}
			case *ast.ForStmt, *ast.RangeStmt, *ast.SwitchStmt, *ast.TypeSwitchStmt, *ast.SelectStmt:
				if m != n {
					// A break inside them is theirs.
					for _, child := range childStmts(m) {
						walk(child, false)
					}
					return false
				}
			}
			return true
		})
	}
	walk(rs.Body, true)
	return exits, ok
}

// childStmts lists the parts of a loop, switch or select that can hold
// statements.
func childStmts(n ast.Node) []ast.Node {
	switch n := n.(type) {
	case *ast.ForStmt:
		return []ast.Node{n.Body}
	case *ast.RangeStmt:
		return []ast.Node{n.Body}
	case *ast.SwitchStmt:
		return []ast.Node{n.Body}
	case *ast.TypeSwitchStmt:
		return []ast.Node{n.Body}
	case *ast.SelectStmt:
		return []ast.Node{n.Body}
	}
	return nil
}

// loop is a range over a map as the acts-once rule reads it.
type loop struct {
	info *types.Info
	rs   *ast.RangeStmt
	vars map[types.Object]bool // its key and value
	w    writes
}

// writes is what the loop body writes: each variable or field with the
// statements that write it.
type writes struct {
	sites map[types.Object][]ast.Node
	// unknown: the body calls something whose writes vet cannot see.
	unknown bool
	// storesEntry: the body stores something of the entry where it
	// outlives the pass (c.Last = id, n.Total += v, delete(m, k)):
	// which entries went before the exit then shows.
	storesEntry bool
}

// ofEntry: obj is the loop's key or value, or declared in its body: it
// may differ from one entry to the next.
func (l *loop) ofEntry(obj types.Object) bool {
	return l.vars[obj] || obj.Pos() >= l.rs.Body.Pos() && obj.Pos() < l.rs.Body.End()
}

// namesEntry: n names something of the entry.
func (l *loop) namesEntry(n ast.Node) bool {
	found := false
	ast.Inspect(n, func(m ast.Node) bool {
		if id, ok := m.(*ast.Ident); ok {
			if obj := l.info.ObjectOf(id); obj != nil && l.ofEntry(obj) {
				found = true
			}
		}
		return !found
	})
	return found
}

// outlives: e is (part of) a variable that lives past one entry's pass.
func (l *loop) outlives(e ast.Expr) bool {
	for {
		switch x := ast.Unparen(e).(type) {
		case *ast.Ident:
			obj := l.info.ObjectOf(x)
			return obj != nil && x.Name != "_" && !l.ofEntry(obj)
		case *ast.SelectorExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		default:
			return true
		}
	}
}

// collectWrites reads what the body writes: assignments, ++ and --, the
// containers given to delete, clear and copy, a pointer taken (it may be
// written through). A call of anything but an effect (isEffect: env's,
// and module functions that reach one, which are judged as effects), a
// draw, a conversion, a builtin or a function that writes nothing makes
// the writes unknown.
func (l *loop) collectWrites(isEffect func(*types.Func) bool) {
	l.w = writes{sites: map[types.Object][]ast.Node{}}
	var mark func(e ast.Expr, at ast.Node)
	mark = func(e ast.Expr, at ast.Node) {
		switch e := ast.Unparen(e).(type) {
		case *ast.Ident:
			if obj := l.info.ObjectOf(e); obj != nil {
				l.w.sites[obj] = append(l.w.sites[obj], at)
			}
		case *ast.SelectorExpr:
			if obj := l.info.ObjectOf(e.Sel); obj != nil {
				l.w.sites[obj] = append(l.w.sites[obj], at)
			}
			mark(e.X, at)
		case *ast.IndexExpr:
			mark(e.X, at)
		case *ast.StarExpr:
			mark(e.X, at)
		}
	}
	ast.Inspect(l.rs.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for _, lhs := range n.Lhs {
				mark(lhs, n)
				if l.outlives(lhs) && l.namesEntry(n) {
					l.w.storesEntry = true
				}
			}
		case *ast.IncDecStmt:
			mark(n.X, n)
		case *ast.UnaryExpr:
			if n.Op == token.AND {
				mark(n.X, n)
			}
		case *ast.RangeStmt:
			if n.Key != nil {
				mark(n.Key, n)
			}
			if n.Value != nil {
				mark(n.Value, n)
			}
		case *ast.CallExpr:
			switch f := typeutil.Callee(l.info, n).(type) {
			case *types.Builtin:
				switch f.Name() {
				case "delete", "clear", "copy":
					if len(n.Args) > 0 {
						mark(n.Args[0], n)
						if l.outlives(n.Args[0]) && l.namesEntry(n) {
							l.w.storesEntry = true
						}
					}
				}
			case *types.Func:
				if !isEffect(f.Origin()) && !writesNothing(f) && !isDraw(f) {
					l.w.unknown = true
				}
			default:
				if !l.info.Types[n.Fun].IsType() {
					l.w.unknown = true // a function value
				}
			}
		}
		return true
	})
}

// writesOutside: the body writes a variable or field that outlives one
// entry's pass.
func (l *loop) writesOutside() bool {
	for obj := range l.w.sites {
		if !l.ofEntry(obj) {
			return true
		}
	}
	return false
}

// isDraw: env.Rand, and the methods of the generator it returns.
func isDraw(f *types.Func) bool {
	f = f.Origin()
	if isEnvEffect(f) && f.Name() == "Rand" {
		return true
	}
	return f.Pkg() != nil && f.Pkg().Path() == "math/rand/v2" && recvName(f) == "Rand"
}

// writesNothing: package-level functions of packages that only compute,
// methods of time's values (t.Sub(u), d.Seconds()), and what node.Env
// answers without an effect (Now, Self, Peers).
func writesNothing(f *types.Func) bool {
	if f.Pkg() == nil {
		return false
	}
	sig, _ := f.Type().(*types.Signature)
	if sig != nil && sig.Recv() != nil {
		switch {
		case f.Pkg().Path() == "time":
			_, ptr := sig.Recv().Type().(*types.Pointer)
			return !ptr
		case f.Pkg().Path() == nodePath && recvName(f) == "Env":
			switch f.Name() {
			case "Now", "Self", "Peers":
				return true
			}
		}
		return false
	}
	switch f.Pkg().Path() {
	case "strings", "strconv", "unicode", "unicode/utf8", "math", "cmp":
		return true
	}
	return false
}

// orderFreeOnce tells whether the effect call, found inside the body with
// stack the nodes from the body down to it, happens at most once per run
// of the loop with the same arguments whichever entry reaches it.
func (l *loop) orderFreeOnce(stack []ast.Node, call *ast.CallExpr, exit ast.Stmt) bool {
	if l.w.unknown || l.w.storesEntry || !l.entryFree(call) {
		return false
	}
	// From the call outwards: the statements after it, in its block and
	// then in each enclosing block up to the loop's body, must reach exit
	// with no branch. An if crossed on the way decides whether the effect
	// happens before the loop leaves: its condition must not depend on
	// the entry either.
	var conds []ast.Node
	for i := len(stack) - 1; i >= 0; i-- {
		switch n := stack[i].(type) {
		case *ast.FuncLit, *ast.ForStmt, *ast.RangeStmt, *ast.SwitchStmt, *ast.TypeSwitchStmt,
			*ast.SelectStmt, *ast.CaseClause, *ast.CommClause, *ast.LabeledStmt:
			return false
		case *ast.IfStmt:
			conds = append(conds, n.Cond)
			if n.Init != nil {
				conds = append(conds, n.Init)
			}
		case *ast.BlockStmt:
			child, ok := stack[i+1].(ast.Stmt)
			if !ok {
				return false
			}
			after := false
			for _, s := range n.List {
				if !after {
					after = s == child
					continue
				}
				if s == exit {
					for _, c := range conds {
						if !l.condFree(c, child.Pos(), exit.End()) {
							return false
						}
					}
					return true
				}
				if jumps(s) {
					return false
				}
			}
			if n == l.rs.Body {
				return false // the loop goes on to its next entry
			}
		}
	}
	return false
}

// condFree: a condition on the way from an effect to the loop's exit
// names nothing of the entry, and nothing the body writes except within
// from..to (the effect's statements up to the exit, which run once) with
// values that are not the entry's; it calls only what writes nothing.
func (l *loop) condFree(cond ast.Node, from, to token.Pos) bool {
	free := true
	ast.Inspect(cond, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			obj := l.info.ObjectOf(n)
			if obj == nil {
				return true
			}
			if l.ofEntry(obj) {
				free = false
			}
			for _, at := range l.w.sites[obj] {
				if at.Pos() < from || at.End() > to || l.namesEntry(at) {
					free = false
				}
			}
		case *ast.CallExpr:
			if !l.info.Types[n.Fun].IsType() {
				switch f := typeutil.Callee(l.info, n).(type) {
				case *types.Builtin:
					free = free && (f.Name() == "len" || f.Name() == "cap")
				case *types.Func:
					free = free && writesNothing(f)
				default:
					free = false
				}
			}
		}
		return true
	})
	return free
}

// entryFree: the call names nothing that could differ between entries.
func (l *loop) entryFree(call *ast.CallExpr) bool {
	free := true
	ast.Inspect(call, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			obj := l.info.ObjectOf(n)
			if obj != nil && (l.ofEntry(obj) || len(l.w.sites[obj]) > 0) {
				free = false
			}
		case *ast.CallExpr:
			if n != call && !l.info.Types[n.Fun].IsType() {
				// A draw is one draw whichever entry reaches it (a
				// jittered timer); a draw stored with the entry makes
				// the loop store the entry, which is refused apart.
				f, ok := typeutil.Callee(l.info, n).(*types.Func)
				free = ok && (writesNothing(f) || isDraw(f))
			}
		case *ast.FuncLit:
			free = false
		}
		return free
	})
	return free
}

// jumps tells whether s holds a return or a branch.
func jumps(s ast.Stmt) bool {
	found := false
	ast.Inspect(s, func(n ast.Node) bool {
		switch n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt, *ast.BranchStmt:
			found = true
		}
		return !found
	})
	return found
}
