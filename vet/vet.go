// Package vet finds code in node handlers that would make replay diverge:
// its one job is the go/analysis Analyzer behind `replay vet` and
// cmd/replay-vet (go vet -vettool).
//
// # What it looks at
//
// The roots are the methods of every type of the package that implements
// node.Handler (T or *T), including methods promoted from embedded types.
// From a root the analyzer follows every function or method of the same
// module that the code names (a call, or a function value passed on),
// transitively and without a depth limit: inside a package by walking its
// call graph, across packages through facts (Reaches) that each package
// exports for its functions. It never follows into package node (the
// runtime: its tasks block on channels by design). It does not look into
// other modules (a
// library such as etcd raft is trusted to be deterministic, or routed as
// raft's crypto/rand reads are) nor through interface method calls or
// function values it did not see named (a gap: a handler that calls a
// helper through an interface is checked only if the helper's type is
// itself reached).
//
// # What it reports
//
// In what the roots reach: go statements, select, channel sends and
// receives (and range over a channel), the wall clock (time.Now, Since,
// Until), real timers (time.After, Tick, NewTimer, NewTicker, AfterFunc,
// Sleep), the package-level functions of math/rand and math/rand/v2 other
// than constructors (methods on a *rand.Rand, such as env.Rand()'s, are
// fine), crypto/rand (functions and Reader) unless the package's
// system.System sets CryptoRand (then drivers route handler reads through
// node.InterceptCryptoRand and record them), file, network, process and
// environment access through os, os/exec, os/signal, os/user, net,
// net/http's clients and servers, io/ioutil, syscall and path/filepath's
// walkers; writes to package-level variables (and pointer-receiver
// method calls on them), which every node of an in-process run shares;
// and a range over a map whose order reaches a send, a timer, a
// draw from env.Rand, a returned key or value, or an append to a slice
// that outlives the loop and is not sorted after it in the same function.
// That last rule is a syntactic approximation: a call inside the loop body
// to env.Send, env.After or env.Rand, or to a module function that
// (transitively) does one of those, counts as a sink; an index write
// (out[i] = k) or a string built by += does not.
//
// # Suppressing a finding
//
// A comment //replay:ok on the line of a finding, or on the line above
// it, suppresses it (write why after it: //replay:ok only at
// startup, never during an event). A suppressed construct in a helper does
// not propagate to the handlers that call it.
package vet

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/types/typeutil"
)

const (
	nodePath   = "github.com/replaycheck/replaycheck/node"
	systemPath = "github.com/replaycheck/replaycheck/system"
)

// Analyzer reports nondeterminism reachable from node handlers.
var Analyzer = &analysis.Analyzer{
	Name:       "replayvet",
	Doc:        "report code reachable from node.Handler methods that would make replay diverge (goroutines, select, channels, wall clock, real timers, global math/rand, unrouted crypto/rand, file and network I/O, map order that reaches a send, a timer or a kept slice)",
	URL:        "https://github.com/replaycheck/replaycheck/blob/main/docs/user-guide.md#checking-handlers-for-nondeterminism-replay-vet",
	Run:        run,
	FactTypes:  []analysis.Fact{new(Reaches)},
	ResultType: reflect.TypeFor[*Result](),
}

// Result is what the analyzer found in one package besides diagnostics:
// the handler types whose methods it walked from. A package with none
// was checked for nothing (its handler may sit in a file the build tags
// leave out), which a clean report alone does not say.
type Result struct {
	Handlers []string
}

// Reaches is the fact exported for each package-level function and method
// of a module package that reaches nondeterminism, or that sends, sets a
// timer or draws from env.Rand (which matters when it is called inside a
// range over a map).
type Reaches struct {
	Hazards []Reached // the first hazard of each Kind the function reaches
	Effects bool      // reaches env.Send, env.After or env.Rand
}

// Reached is one hazard as a fact carries it: positions as text, since
// the fact travels to other packages (and, under go vet, other processes).
type Reached struct {
	Kind Kind
	What string // "time.Now", "go statement"
	At   string // "example.com/pkg/file.go:12"
	Via  string // the functions between the fact's function and the hazard
}

func (*Reaches) AFact() {}

func (r *Reaches) String() string {
	var parts []string
	for _, h := range r.Hazards {
		parts = append(parts, string(h.Kind)+":"+h.What)
	}
	if r.Effects {
		parts = append(parts, "effects")
	}
	return "reaches(" + strings.Join(parts, ",") + ")"
}

type hazard struct {
	kind Kind
	what string
	pos  token.Pos
}

type ref struct {
	fn  *types.Func // Origin of the named function
	pos token.Pos
}

// fun is what one pass learns about one declared function.
type fun struct {
	obj     *types.Func
	decl    *ast.FuncDecl
	direct  []hazard // in source order
	refs    []ref    // module functions named in the body
	effects bool     // names env.Send, env.After or env.Rand, or reaches a function that does
	ranges  []*ast.RangeStmt
	sum     map[Kind]Reached
}

type checker struct {
	pass    *analysis.Pass
	funs    map[*types.Func]*fun
	order   []*fun // declaration order, for deterministic output
	ok      map[string]map[int]bool
	routed  bool // the package's system.System sets CryptoRand
	handler *types.Interface
}

func run(pass *analysis.Pass) (any, error) {
	if isStd(pass.Pkg.Path()) && (pass.Module == nil || pass.Module.Path == "") {
		return &Result{}, nil // the standard library: its APIs are classified, not analysed
	}
	c := &checker{pass: pass, funs: map[*types.Func]*fun{}, ok: suppressions(pass)}
	c.handler = findHandler(pass.Pkg)
	for _, f := range pass.Files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			obj, ok := pass.TypesInfo.Defs[fd.Name].(*types.Func)
			if !ok {
				continue
			}
			fn := &fun{obj: obj, decl: fd}
			c.funs[obj] = fn
			c.order = append(c.order, fn)
		}
		c.findRouting(f)
	}
	for _, fn := range c.order {
		c.collect(fn)
	}
	c.propagateEffects()
	for _, fn := range c.order {
		for _, rs := range fn.ranges {
			if what, ok := c.mapSink(fn, rs); ok && !c.suppressed(rs.For) {
				fn.direct = append(fn.direct, hazard{MapOrder, what, rs.For})
			}
		}
		sort.SliceStable(fn.direct, func(i, j int) bool { return fn.direct[i].pos < fn.direct[j].pos })
	}
	c.summarize()
	c.exportFacts()
	res := &Result{}
	if c.handler != nil {
		c.report()
		for _, tn := range c.handlerTypes() {
			res.Handlers = append(res.Handlers, tn.Name())
		}
	}
	return res, nil
}

// collect walks one function body for hazards, references to module
// functions, env effects and map ranges.
func (c *checker) collect(fn *fun) {
	info := c.pass.TypesInfo
	add := func(k Kind, what string, pos token.Pos) {
		if !c.suppressed(pos) {
			fn.direct = append(fn.direct, hazard{k, what, pos})
		}
	}
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			add(Goroutine, "go statement", n.Go)
		case *ast.SelectStmt:
			add(Select, "select", n.Select)
			// The clauses' channel operations are the select's; only
			// their bodies are walked, so each select is one finding.
			for _, cl := range n.Body.List {
				for _, s := range cl.(*ast.CommClause).Body {
					ast.Inspect(s, visit)
				}
			}
			return false
		case *ast.SendStmt:
			add(Channel, "channel send", n.Arrow)
		case *ast.AssignStmt:
			if n.Tok != token.DEFINE {
				for _, lhs := range n.Lhs {
					if v := packageVar(info, lhs); v != nil {
						add(Global, "write to the package-level variable "+v.Name(), lhs.Pos())
					}
				}
			}
		case *ast.IncDecStmt:
			if v := packageVar(info, n.X); v != nil {
				add(Global, "write to the package-level variable "+v.Name(), n.X.Pos())
			}
		case *ast.CallExpr:
			// counter.Add(1), mu.Lock(), buf.WriteString(s) on a
			// package-level value: a method that may change it.
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
				if v := packageVar(info, sel.X); v != nil && pointerMethodOnValue(info, sel, v) {
					add(Global, fmt.Sprintf("call of %s.%s, which may change the package-level variable %s", v.Name(), sel.Sel.Name, v.Name()), sel.Pos())
				}
			}
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				add(Channel, "channel receive", n.OpPos)
			}
		case *ast.RangeStmt:
			switch types.Unalias(info.TypeOf(n.X)).Underlying().(type) {
			case *types.Chan:
				add(Channel, "range over a channel", n.For)
			case *types.Map:
				fn.ranges = append(fn.ranges, n)
			case *types.Signature:
				if mapIterator(info, n.X) {
					fn.ranges = append(fn.ranges, n) // as random as the map
				}
			}
		case *ast.Ident:
			switch obj := info.Uses[n].(type) {
			case *types.Func:
				obj = obj.Origin()
				if k, what, ok := classify(obj); ok {
					add(k, what, n.Pos())
				} else if isEnvEffect(obj) {
					fn.effects = true
				} else if c.inModule(obj.Pkg()) && !isInterfaceMethod(obj) {
					fn.refs = append(fn.refs, ref{obj, n.Pos()})
				}
			case *types.Var:
				if k, what, ok := classifyVar(obj); ok {
					add(k, what, n.Pos())
				}
			}
		}
		return true
	}
	ast.Inspect(fn.decl.Body, visit)
}

// packageVar is the package-level variable that writing e writes into
// (x, x.f, x[i], x.f[i].g, (*x) is not: x is then a pointer the variable
// holds, not the variable), or nil. Blank assignments are not writes.
func packageVar(info *types.Info, e ast.Expr) *types.Var {
	for {
		switch x := e.(type) {
		case *ast.ParenExpr:
			e = x.X
		case *ast.SelectorExpr:
			if _, isPkg := info.Uses[identOf(x.X)].(*types.PkgName); isPkg {
				e = x.Sel // pkg.Var
				continue
			}
			if _, ptr := types.Unalias(info.TypeOf(x.X)).Underlying().(*types.Pointer); ptr {
				return nil // through a pointer: what it points at is not the variable
			}
			e = x.X
		case *ast.IndexExpr:
			switch types.Unalias(info.TypeOf(x.X)).Underlying().(type) {
			case *types.Array:
				e = x.X
			case *types.Map, *types.Slice:
				// The map or the slice's array the variable holds:
				// shared just the same.
				e = x.X
			default:
				return nil
			}
		case *ast.Ident:
			v, ok := info.Uses[x].(*types.Var)
			if !ok || v.Pkg() == nil || v.Parent() != v.Pkg().Scope() {
				return nil
			}
			return v
		default:
			return nil
		}
	}
}

func identOf(e ast.Expr) *ast.Ident {
	id, _ := e.(*ast.Ident)
	return id
}

// pointerMethodOnValue reports whether sel calls a method with a pointer
// receiver on v's value itself (v not a pointer): the call may change v.
// The sync package's locks and sync.Once, and atomic loads, are not
// counted: a lock or a once-built table shared by the nodes changes
// nothing they see, and a load is a read (the writes are reported).
func pointerMethodOnValue(info *types.Info, sel *ast.SelectorExpr, v *types.Var) bool {
	if _, ptr := types.Unalias(v.Type()).Underlying().(*types.Pointer); ptr {
		return false
	}
	s := info.Selections[sel]
	if s == nil || s.Kind() != types.MethodVal {
		return false
	}
	if pkg := s.Obj().Pkg(); pkg != nil {
		switch {
		case pkg.Path() == "sync":
			return false
		case pkg.Path() == "sync/atomic" && s.Obj().Name() == "Load":
			return false
		}
	}
	sig, ok := s.Obj().Type().(*types.Signature)
	if !ok || sig.Recv() == nil {
		return false
	}
	_, ptrRecv := types.Unalias(sig.Recv().Type()).(*types.Pointer)
	return ptrRecv
}

// propagateEffects computes fun.effects to a fixpoint over the package's
// call graph and the facts of other packages.
func (c *checker) propagateEffects() {
	// A worklist from the functions with effects to their callers: a
	// pass over every function per level of the call chain made a chain
	// of N functions cost N passes.
	callers := c.callers(false)
	var work []*fun
	for _, fn := range c.order {
		if !fn.effects {
			for _, r := range fn.refs {
				if _, local := c.funs[r.fn]; !local && c.effectsOf(r.fn) {
					fn.effects = true
					break
				}
			}
		}
		if fn.effects {
			work = append(work, fn)
		}
	}
	for len(work) > 0 {
		g := work[0]
		work = work[1:]
		for _, fn := range callers[g] {
			if !fn.effects {
				fn.effects = true
				work = append(work, fn)
			}
		}
	}
}

// callers lists, for each function of the package, the functions that
// name it, in declaration order (skipping names on suppressed lines when
// suppressed is set: a //replay:ok call does not carry its hazards).
func (c *checker) callers(suppressed bool) map[*fun][]*fun {
	out := map[*fun][]*fun{}
	for _, fn := range c.order {
		for _, r := range fn.refs {
			g, ok := c.funs[r.fn]
			if !ok || g == fn || suppressed && c.suppressed(r.pos) {
				continue
			}
			if l := out[g]; len(l) == 0 || l[len(l)-1] != fn {
				out[g] = append(l, fn)
			}
		}
	}
	return out
}

func (c *checker) effectsOf(f *types.Func) bool {
	if g, ok := c.funs[f]; ok {
		return g.effects
	}
	var fact Reaches
	return c.pass.ImportObjectFact(f, &fact) && fact.Effects
}

// mapIterator says whether x is a call of maps.Keys, maps.Values or
// maps.All: an iterator over a map, in the map's random order.
func mapIterator(info *types.Info, x ast.Expr) bool {
	call, ok := ast.Unparen(x).(*ast.CallExpr)
	if !ok {
		return false
	}
	fn := typeutil.StaticCallee(info, call) // through a selector or an instantiation
	if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != "maps" {
		return false
	}
	switch fn.Name() {
	case "Keys", "Values", "All":
		return true
	}
	return false
}

// mapSink says what, inside the body of a range over a map, makes the
// iteration order observable, if anything does.
func (c *checker) mapSink(fn *fun, rs *ast.RangeStmt) (string, bool) {
	info := c.pass.TypesInfo
	loopVars := map[types.Object]bool{}
	for _, e := range []ast.Expr{rs.Key, rs.Value} {
		if id, ok := e.(*ast.Ident); ok {
			if obj := info.ObjectOf(id); obj != nil {
				loopVars[obj] = true
			}
		}
	}
	exits, followed := rangeExits(rs)
	var lp *loop // made when an effect is met
	// once: the effect named by id happens at most once per run of the
	// loop with the same arguments whatever the order (orderFreeOnce).
	var stack []ast.Node
	// A module function (opaque) may read state the loop wrote before
	// it: it counts only when the loop writes nothing that outlives an
	// entry.
	once := func(id *ast.Ident, opaque bool) bool {
		if len(exits) != 1 || !followed {
			return false
		}
		for i := len(stack) - 1; i >= 0; i-- {
			if call, ok := stack[i].(*ast.CallExpr); ok && call.Fun.Pos() <= id.Pos() && id.End() <= call.Fun.End() {
				if lp == nil {
					lp = &loop{info: info, rs: rs, vars: loopVars}
					lp.collectWrites(func(f *types.Func) bool {
						return isEnvEffect(f) || c.inModule(f.Pkg()) && c.effectsOf(f)
					})
				}
				if opaque && lp.writesOutside() {
					return false
				}
				return lp.orderFreeOnce(stack[:i+1], call, exits[0])
			}
		}
		return false
	}
	var what string
	ast.Inspect(rs.Body, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return false
		}
		if what != "" {
			return false
		}
		stack = append(stack, n)
		switch n := n.(type) {
		case *ast.CallExpr:
			if b, ok := typeutil.Callee(info, n).(*types.Builtin); ok && b.Name() == "append" && len(n.Args) > 0 {
				if c.keptAppend(fn, rs, n.Args[0]) {
					what = "the order of appends to " + types.ExprString(n.Args[0])
				}
			}
		case *ast.Ident:
			if obj, ok := info.Uses[n].(*types.Func); ok {
				obj = obj.Origin()
				if isEnvEffect(obj) {
					if once(n, false) {
						break // the same effect whichever entry came first
					}
					what = "the order of env." + obj.Name() + " calls"
					if obj.Name() == "Rand" {
						what = "which key gets which env.Rand() draw"
					}
				} else if c.inModule(obj.Pkg()) && c.effectsOf(obj) && !once(n, true) {
					what = "the order of calls to " + obj.Name() + " (which sends, sets timers or draws from env.Rand)"
				}
			}
		case *ast.ReturnStmt:
			for _, res := range n.Results {
				if mentions(info, res, loopVars) {
					what = "which key or value is returned"
				}
			}
		}
		return true
	})
	return what, what != ""
}

// keptAppend reports whether an append inside a map range grows a slice
// that outlives the iteration unsorted: not one declared inside the loop
// body, and not sorted (sort.*, slices.Sort*) later in the function.
func (c *checker) keptAppend(fn *fun, rs *ast.RangeStmt, target ast.Expr) bool {
	info := c.pass.TypesInfo
	target = ast.Unparen(target)
	if id, ok := target.(*ast.Ident); ok {
		obj := info.ObjectOf(id)
		if obj != nil && obj.Pos() >= rs.Body.Pos() && obj.Pos() < rs.Body.End() {
			return false
		}
		if v, ok := obj.(*types.Var); ok && v.Parent() != nil && v.Parent() != c.pass.Pkg.Scope() && usedOnlyUnordered(info, fn.decl.Body, rs, v) {
			return false
		}
	}
	want := types.ExprString(target)
	sorted := false
	ast.Inspect(fn.decl.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if sorted || !ok || call.Pos() < rs.End() || len(call.Args) == 0 {
			return !sorted
		}
		f, ok := typeutil.Callee(info, call).(*types.Func)
		if !ok || !isSort(f) {
			return true
		}
		arg := ast.Unparen(call.Args[0])
		// sort.Sort(sort.StringSlice(keys)) sorts keys, and so does
		// sort.Sort(sort.Reverse(sort.StringSlice(keys))).
		for {
			conv, ok := arg.(*ast.CallExpr)
			if !ok || len(conv.Args) != 1 {
				break
			}
			arg = ast.Unparen(conv.Args[0])
		}
		if types.ExprString(arg) == want {
			sorted = true
		}
		return true
	})
	return !sorted
}

// usedOnlyUnordered reports whether the local slice v is used after the
// map range rs only in ways its order cannot change: ranged over by loops
// that only delete from maps (a list of stale keys), or measured with
// len. A new user's keys collected to delete after the loop were
// reported as though their order reached the run.
func usedOnlyUnordered(info *types.Info, body *ast.BlockStmt, rs *ast.RangeStmt, v *types.Var) bool {
	ok := true
	var stack []ast.Node
	ast.Inspect(body, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return false
		}
		if !ok {
			return false
		}
		stack = append(stack, n)
		id, isIdent := n.(*ast.Ident)
		if !isIdent || info.Uses[id] != v || id.Pos() < rs.End() {
			return true
		}
		switch parent := stack[len(stack)-2].(type) {
		case *ast.RangeStmt:
			ok = parent.X == id && onlyDeletes(info, parent.Body)
		case *ast.CallExpr:
			b, isBuiltin := typeutil.Callee(info, parent).(*types.Builtin)
			ok = isBuiltin && b.Name() == "len"
		default:
			ok = false
		}
		return true
	})
	return ok
}

// onlyDeletes reports whether body holds nothing but delete calls.
func onlyDeletes(info *types.Info, body *ast.BlockStmt) bool {
	for _, st := range body.List {
		es, ok := st.(*ast.ExprStmt)
		if !ok {
			return false
		}
		call, ok := ast.Unparen(es.X).(*ast.CallExpr)
		if !ok {
			return false
		}
		if b, ok := typeutil.Callee(info, call).(*types.Builtin); !ok || b.Name() != "delete" {
			return false
		}
	}
	return true
}

func isSort(f *types.Func) bool {
	if f.Pkg() == nil || recvName(f) != "" {
		return false
	}
	switch f.Pkg().Path() {
	case "sort":
		switch f.Name() {
		case "Strings", "Ints", "Float64s", "Slice", "SliceStable", "Sort", "Stable":
			return true
		}
	case "slices":
		switch f.Name() {
		case "Sort", "SortFunc", "SortStableFunc":
			return true
		}
	}
	return false
}

func mentions(info *types.Info, e ast.Expr, objs map[types.Object]bool) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && objs[info.Uses[id]] {
			found = true
		}
		return !found
	})
	return found
}

// summarize computes, for every function, the first hazard of each kind
// it reaches, to a fixpoint over the package's call graph and the facts
// of other module packages.
func (c *checker) summarize() {
	for _, fn := range c.order {
		fn.sum = map[Kind]Reached{}
		for _, h := range fn.direct {
			if _, ok := fn.sum[h.kind]; !ok {
				fn.sum[h.kind] = Reached{Kind: h.kind, What: h.what, At: c.where(h.pos)}
			}
		}
		for _, r := range fn.refs {
			if _, local := c.funs[r.fn]; local || c.suppressed(r.pos) {
				continue
			}
			var fact Reaches
			if !c.pass.ImportObjectFact(r.fn, &fact) {
				continue
			}
			for _, h := range fact.Hazards {
				if _, ok := fn.sum[h.Kind]; !ok {
					fn.sum[h.Kind] = Reached{Kind: h.Kind, What: h.What, At: h.At, Via: via(name(r.fn), h.Via)}
				}
			}
		}
	}
	// A worklist from the functions with hazards to their callers, each
	// caller taking a kind from the first callee that reaches it: the
	// nearest hazard. (A pass over every function per level of the call
	// chain made a chain of 20,000 functions take minutes.)
	callers := c.callers(true)
	var work []*fun
	for _, fn := range c.order {
		if len(fn.sum) > 0 {
			work = append(work, fn)
		}
	}
	for len(work) > 0 {
		g := work[0]
		work = work[1:]
		for _, fn := range callers[g] {
			grew := false
			for _, k := range kinds {
				h, ok := g.sum[k]
				if _, have := fn.sum[k]; ok && !have {
					fn.sum[k] = Reached{Kind: k, What: h.What, At: h.At, Via: via(name(g.obj), h.Via)}
					grew = true
				}
			}
			if grew {
				work = append(work, fn)
			}
		}
	}
}

// maxVia bounds the functions a finding's path names: a long chain is
// shown by its first function and the last few before the hazard.
const maxVia = 8

func via(first, rest string) string {
	if rest == "" {
		return first
	}
	if hops := strings.Split(rest, " → "); len(hops) >= maxVia {
		rest = "… → " + strings.Join(hops[len(hops)-(maxVia-2):], " → ")
	}
	return first + " → " + rest
}

// exportFacts exports a Reaches fact for each package-level function and
// method with something to say; other packages only ever name those.
func (c *checker) exportFacts() {
	for _, fn := range c.order {
		if len(fn.sum) == 0 && !fn.effects {
			continue
		}
		fact := &Reaches{Effects: fn.effects}
		for _, k := range kinds {
			if h, ok := fn.sum[k]; ok {
				fact.Hazards = append(fact.Hazards, h)
			}
		}
		c.pass.ExportObjectFact(fn.obj, fact)
	}
}

// report walks from the handler methods through the package's call graph
// and reports each hazard of what it reaches once, where it is: in this
// package at the construct, in another package at the call that reaches it.
func (c *checker) report() {
	parent := map[*fun]*fun{}
	var queue []*fun
	seen := map[*fun]bool{}
	for _, tn := range c.handlerTypes() {
		mset := types.NewMethodSet(types.NewPointer(tn.Type()))
		for i := 0; i < mset.Len(); i++ {
			m := mset.At(i).Obj().(*types.Func).Origin()
			if fn, ok := c.funs[m]; ok {
				if !seen[fn] {
					seen[fn] = true
					queue = append(queue, fn)
				}
				continue
			}
			if m.Pkg() != c.pass.Pkg && c.inModule(m.Pkg()) {
				// A method promoted from an embedded type of another
				// package: its facts, reported at the handler type.
				var fact Reaches
				if c.pass.ImportObjectFact(m, &fact) {
					for _, h := range fact.Hazards {
						c.reportFact(tn.Pos(), fmt.Sprintf("handler %s's method %s", tn.Name(), m.Name()), h)
					}
				}
			}
		}
	}
	for len(queue) > 0 {
		fn := queue[0]
		queue = queue[1:]
		for _, r := range fn.refs {
			if g, ok := c.funs[r.fn]; ok && !seen[g] && !c.suppressed(r.pos) {
				seen[g] = true
				parent[g] = fn
				queue = append(queue, g)
			}
		}
	}
	for _, fn := range c.order {
		if !seen[fn] {
			continue
		}
		ctx := ""
		if p := parent[fn]; p != nil {
			chain := []string{name(fn.obj)}
			for q := p; q != nil; q = parent[q] {
				chain = append(chain, name(q.obj))
			}
			ctx = fmt.Sprintf(" [in %s, reached from %s]", chain[0], strings.Join(reverse(chain[1:]), " → "))
		}
		lines := map[string]bool{}
		for _, h := range fn.direct {
			if h.kind == CryptoRnd && c.routed {
				continue
			}
			key := fmt.Sprint(h.kind, c.pass.Fset.Position(h.pos).Line)
			if lines[key] {
				continue // one finding per kind and line: rand.Int(rand.Reader, n)
			}
			lines[key] = true
			c.pass.Report(analysis.Diagnostic{Pos: h.pos, Category: string(h.kind), Message: explain(h.kind, h.what) + ctx})
		}
		for _, r := range fn.refs {
			if _, local := c.funs[r.fn]; local || c.suppressed(r.pos) {
				continue
			}
			var fact Reaches
			if c.pass.ImportObjectFact(r.fn, &fact) {
				for _, h := range fact.Hazards {
					c.reportFact(r.pos, "call of "+name(r.fn), h)
				}
			}
		}
	}
}

func (c *checker) reportFact(pos token.Pos, subject string, h Reached) {
	if h.Kind == CryptoRnd && c.routed {
		return
	}
	at := h.At
	if h.Via != "" {
		at += ", via " + h.Via
	}
	c.pass.Report(analysis.Diagnostic{
		Pos:      pos,
		Category: string(h.Kind),
		Message:  fmt.Sprintf("%s reaches %s (%s): %s", subject, h.What, at, explain(h.Kind, h.What)),
	})
}

func reverse(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[len(s)-1-i] = x
	}
	return out
}

// handlerTypes are the package's named types that implement node.Handler,
// by value or by pointer.
func (c *checker) handlerTypes() []*types.TypeName {
	var out []*types.TypeName
	scope := c.pass.Pkg.Scope()
	for _, n := range scope.Names() {
		tn, ok := scope.Lookup(n).(*types.TypeName)
		if !ok || tn.IsAlias() {
			continue
		}
		if _, isIface := tn.Type().Underlying().(*types.Interface); isIface {
			continue
		}
		if n, ok := tn.Type().(*types.Named); ok && n.TypeParams().Len() > 0 {
			// Implements is unspecified for uninstantiated generic types:
			// a generic handler is a documented gap.
			continue
		}
		if types.Implements(tn.Type(), c.handler) || types.Implements(types.NewPointer(tn.Type()), c.handler) {
			out = append(out, tn)
		}
	}
	return out
}

// findHandler finds node.Handler among the packages pkg imports,
// transitively; nil if pkg cannot name it (then it has no handlers).
func findHandler(pkg *types.Package) *types.Interface {
	seen := map[*types.Package]bool{}
	var find func(p *types.Package) *types.Interface
	find = func(p *types.Package) *types.Interface {
		if seen[p] {
			return nil
		}
		seen[p] = true
		if p.Path() == nodePath {
			if tn, ok := p.Scope().Lookup("Handler").(*types.TypeName); ok {
				if it, ok := tn.Type().Underlying().(*types.Interface); ok {
					return it
				}
			}
			return nil
		}
		for _, q := range p.Imports() {
			if it := find(q); it != nil {
				return it
			}
		}
		return nil
	}
	return find(pkg)
}

// findRouting sets routed if the file builds a system.System with
// CryptoRand set (a literal field, or an assignment to it) to anything but
// the constant false.
func (c *checker) findRouting(f *ast.File) {
	info := c.pass.TypesInfo
	notFalse := func(e ast.Expr) bool {
		tv := info.Types[e]
		return tv.Value == nil || tv.Value.Kind() != constant.Bool || constant.BoolVal(tv.Value)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			if !isSystem(info.TypeOf(n)) {
				return true
			}
			for _, e := range n.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok {
					if id, ok := kv.Key.(*ast.Ident); ok && id.Name == "CryptoRand" && notFalse(kv.Value) {
						c.routed = true
					}
				}
			}
		case *ast.AssignStmt:
			for i, lhs := range n.Lhs {
				if sel, ok := lhs.(*ast.SelectorExpr); ok && sel.Sel.Name == "CryptoRand" && isSystem(info.TypeOf(sel.X)) && i < len(n.Rhs) && notFalse(n.Rhs[i]) {
					c.routed = true
				}
			}
		}
		return true
	})
}

func isSystem(t types.Type) bool {
	if t == nil {
		return false
	}
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == systemPath && n.Obj().Name() == "System"
}

// isEnvEffect: env.Send, env.After and env.Rand are fine in a handler,
// but their order is what a map range must not decide.
func isEnvEffect(f *types.Func) bool {
	if f.Pkg() == nil || f.Pkg().Path() != nodePath || recvName(f) != "Env" && recvName(f) != "Task" {
		return false
	}
	switch f.Name() {
	case "Send", "After", "Rand":
		return true
	}
	return false
}

func isInterfaceMethod(f *types.Func) bool {
	sig := f.Type().(*types.Signature)
	return sig.Recv() != nil && types.IsInterface(sig.Recv().Type())
}

// inModule reports whether p is in the module of the package under
// analysis, the boundary of how far the analyzer follows calls. Drivers
// without module information (analysistest's GOPATH layout) count every
// package outside the standard library as one module.
//
// The runtime (package node) is never followed: it is what records, and
// its tasks block on channels by design (a task's Mutex.Lock reaching a
// channel send is the runtime's hand-off, not the handler's).
func (c *checker) inModule(p *types.Package) bool {
	if p == nil || p.Path() == nodePath && c.pass.Pkg.Path() != nodePath {
		return false
	}
	if p == c.pass.Pkg {
		return true
	}
	if m := c.pass.Module; m != nil && m.Path != "" {
		return p.Path() == m.Path || strings.HasPrefix(p.Path(), m.Path+"/")
	}
	return !isStd(p.Path())
}

// isStd applies the go command's rule: standard library paths have no dot
// in their first element.
func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func name(f *types.Func) string {
	if r := recvName(f); r != "" {
		if _, ptr := f.Type().(*types.Signature).Recv().Type().(*types.Pointer); ptr {
			return "(*" + r + ")." + f.Name()
		}
		return r + "." + f.Name()
	}
	if f.Pkg() != nil {
		return short(f.Pkg().Path()) + "." + f.Name()
	}
	return f.Name()
}

func (c *checker) where(pos token.Pos) string {
	p := c.pass.Fset.Position(pos)
	return fmt.Sprintf("%s/%s:%d", c.pass.Pkg.Path(), filepath.Base(p.Filename), p.Line)
}

// suppressions indexes the //replay:ok comments by file and line.
func suppressions(pass *analysis.Pass) map[string]map[int]bool {
	ok := map[string]map[int]bool{}
	for _, f := range pass.Files {
		for _, cg := range f.Comments {
			for _, cm := range cg.List {
				if strings.HasPrefix(cm.Text, "//replay:ok") {
					p := pass.Fset.Position(cm.Slash)
					if ok[p.Filename] == nil {
						ok[p.Filename] = map[int]bool{}
					}
					ok[p.Filename][p.Line] = true
				}
			}
		}
	}
	return ok
}

// suppressed: a //replay:ok on the construct's line, or on the line above.
func (c *checker) suppressed(pos token.Pos) bool {
	p := c.pass.Fset.Position(pos)
	lines := c.ok[p.Filename]
	return lines[p.Line] || lines[p.Line-1]
}
