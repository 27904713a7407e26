package vet

import (
	"go/ast"
	"go/token"
	"go/types"
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
// with no branch between; and the effect's arguments and receiver may
// name neither the loop's variables, nor anything declared or assigned
// in its body, nor call anything but a conversion.

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

// assignedIn collects the variables and fields written in body: what an
// effect's arguments must not read, since its value could depend on how
// many entries came before.
func assignedIn(info *types.Info, body ast.Node) map[types.Object]bool {
	out := map[types.Object]bool{}
	var mark func(e ast.Expr)
	mark = func(e ast.Expr) {
		switch e := ast.Unparen(e).(type) {
		case *ast.Ident:
			if obj := info.ObjectOf(e); obj != nil {
				out[obj] = true
			}
		case *ast.SelectorExpr:
			if obj := info.ObjectOf(e.Sel); obj != nil {
				out[obj] = true
			}
			mark(e.X)
		case *ast.IndexExpr:
			mark(e.X)
		case *ast.StarExpr:
			mark(e.X)
		}
	}
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				mark(l)
			}
		case *ast.IncDecStmt:
			mark(n.X)
		case *ast.UnaryExpr:
			if n.Op == token.AND { // a pointer taken may be written through
				mark(n.X)
			}
		case *ast.RangeStmt:
			if n.Key != nil {
				mark(n.Key)
			}
			if n.Value != nil {
				mark(n.Value)
			}
		}
		return true
	})
	return out
}

// orderFreeOnce tells whether the effect call, found inside rs's body
// with stack the nodes from rs down to it, happens at most once per run
// of the loop with the same arguments whichever entry reaches it.
func orderFreeOnce(info *types.Info, rs *ast.RangeStmt, stack []ast.Node, call *ast.CallExpr,
	exit ast.Stmt, loopVars, assigned map[types.Object]bool) bool {
	if !entryFree(info, rs, call, loopVars, assigned) {
		return false
	}
	// From the call outwards: the statements after it, in its block and
	// then in each enclosing block up to the loop's body, must reach exit
	// with no branch.
	for i := len(stack) - 1; i > 0; i-- {
		switch n := stack[i].(type) {
		case *ast.FuncLit, *ast.ForStmt, *ast.RangeStmt, *ast.SwitchStmt, *ast.TypeSwitchStmt,
			*ast.SelectStmt, *ast.CaseClause, *ast.CommClause, *ast.LabeledStmt:
			return false
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
					return true
				}
				if jumps(s) {
					return false
				}
			}
			if n == rs.Body {
				return false // the loop goes on to its next entry
			}
		}
	}
	return false
}

// entryFree: the call names nothing that could differ between entries.
func entryFree(info *types.Info, rs *ast.RangeStmt, call *ast.CallExpr, loopVars, assigned map[types.Object]bool) bool {
	free := true
	ast.Inspect(call, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			obj := info.ObjectOf(n)
			if obj == nil {
				return true
			}
			if loopVars[obj] || assigned[obj] || obj.Pos() >= rs.Body.Pos() && obj.Pos() < rs.Body.End() {
				free = false
			}
		case *ast.CallExpr:
			if n != call && !info.Types[n.Fun].IsType() {
				free = false
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

// writesOutside tells whether the loop body writes a variable or field
// that outlives one entry's pass.
func writesOutside(rs *ast.RangeStmt, assigned, loopVars map[types.Object]bool) bool {
	for obj := range assigned {
		inBody := obj.Pos() >= rs.Body.Pos() && obj.Pos() < rs.Body.End()
		if !inBody && !loopVars[obj] {
			return true
		}
	}
	return false
}
