package predicates

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/replaycheck/replaycheck/internal/nearest"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/state"
)

// Table is one row per object of a Go type found in nodes' states.
type Table struct {
	c       *Checker
	id      int
	name    string   // as declared: "paxos.Agent" or a full import path
	columns []string // observed columns; nil: every observed field
	views   []string // columns read as views (listView), not lists
	// colInfos caches column(): per Go type, per name.
	colInfos map[reflect.Type]map[string]colInfo
	getFn    *starlark.Builtin
	rowsFn   *starlark.Builtin
	chained  []string // list columns whose last element digests the list
	keep     int
	pos      syntax.Position
	// confirmed: the type is in the node states' types (checkTableTypes);
	// hadRows: a row was found.
	confirmed, hadRows bool

	cols    map[reflect.Type][]state.Field // resolved columns, per Go type
	colNums map[reflect.Type][]int         // per Go type: each column's number (colNum)
	nums    map[string]int                 // column name -> number, for depCol
	touched []int                          // upsert's scratch: numbers of the columns that changed
	grown   []int                          // upsert's scratch: those of touched only appended to (appendOnly)
	hashes  []uint64                       // upsert's scratch: column hashes
	rows    map[rowKey]*rowState
	order   []*rowState // sorted by node, then path
	sorted  bool
	byNode  map[node.ID][]*rowState
	epoch   int // incremented when rows are added or removed
	// journal lists the latest membership changes, journal[i] being the
	// one that made epoch journalBase+i+1, so that quantifiers and
	// ordered indexes catch up in time proportional to what changed.
	journal     []memberChange
	journalBase int
	changed     int64
	history     map[rowKey]*rowHistory // kept across a node's crash
	hashScratch []uint64               // hashColumns' result, reused
}

type memberChange struct {
	rs    *rowState
	added bool
}

// maxJournal bounds the membership journal; a reader further behind
// re-syncs with every row.
const maxJournal = 4096

func (t *Table) logChange(rs *rowState, added bool) {
	t.epoch++
	if len(t.journal) == maxJournal {
		// Drop the older half at once: amortised O(1) per change.
		n := copy(t.journal, t.journal[maxJournal/2:])
		clear(t.journal[n:])
		t.journal = t.journal[:n]
		t.journalBase += maxJournal / 2
	}
	t.journal = append(t.journal, memberChange{rs, added})
}

// changesSince returns the membership changes after epoch, or false if
// they are no longer all kept.
func (t *Table) changesSince(epoch int) ([]memberChange, bool) {
	if epoch < t.journalBase || epoch > t.epoch {
		return nil, false
	}
	return t.journal[epoch-t.journalBase:], true
}

// replayChanges brings a per-row structure last synced at epoch (quantifier
// instances, an ordered index's keys) up to date by replaying the journal
// through add and drop. It reports false, doing nothing, when the
// structure was never synced or the journal no longer reaches back to
// epoch: the caller then syncs with every row.
func (t *Table) replayChanges(epoch int, synced bool, add, drop func(*rowState)) bool {
	changes, ok := t.changesSince(epoch)
	if !ok || !synced {
		return false
	}
	for _, ch := range changes {
		if ch.added {
			add(ch.rs)
		} else {
			drop(ch.rs)
		}
	}
	return true
}

type rowKey struct {
	node node.ID
	path string
}

// rowState is one row: where it lives and its kept versions.
type rowState struct {
	id    int
	table *Table
	key   rowKey
	v     reflect.Value // the live object
	typ   reflect.Type  // v's type when last hashed
	hash  uint64
	hist  *rowHistory
	seen  int // scan generation, to find removed rows
	// removed: taken out of its table (a scan's memo of an unchanged
	// list must not bring it back).
	removed bool
	// views holds the views made of its columns, by column number,
	// each valid in the step it was made.
	views []*listView
}

type rowHistory struct {
	versions  []version // oldest first, the current one last; at most keep
	fields    []uint64  // per-column hashes of the current version
	lens      []int     // per column: the length of a chained list in the current version
	changed   int64     // time of the last change
	fieldTime []int64   // per column: time of its last change
}

type version struct {
	step   int
	fields starlark.StringDict
}

func (t *Table) String() string        { return fmt.Sprintf("table(%q)", t.name) }
func (t *Table) Type() string          { return "table" }
func (t *Table) Freeze()               {}
func (t *Table) Truth() starlark.Bool  { return true }
func (t *Table) Hash() (uint32, error) { return uint32(t.id), nil }

var (
	_ starlark.Iterable = (*Table)(nil)
	_ starlark.Sequence = (*Table)(nil)
	_ starlark.Mapping  = (*Table)(nil)
	_ starlark.HasAttrs = (*Table)(nil)
)

func (t *Table) sortedRows() []*rowState {
	if !t.sorted {
		t.order = t.order[:0]
		for _, r := range t.rows {
			t.order = append(t.order, r)
		}
		sort.Slice(t.order, func(i, j int) bool {
			a, b := t.order[i].key, t.order[j].key
			if a.node != b.node {
				return a.node < b.node
			}
			return node.CompareNatural(a.path, b.path) < 0
		})
		t.sorted = true
	}
	return t.order
}

// Len implements starlark.Sequence.
func (t *Table) Len() int {
	t.c.read(dep{depTable, t.id, 0})
	return len(t.rows)
}

// Iterate implements starlark.Iterable.
func (t *Table) Iterate() starlark.Iterator {
	t.c.read(dep{depTable, t.id, 0})
	t.c.last.Rows += len(t.rows)
	return &rowIter{rows: slices.Clone(t.sortedRows())}
}

type rowIter struct{ rows []*rowState }

func (it *rowIter) Next(p *starlark.Value) bool {
	if len(it.rows) == 0 {
		return false
	}
	*p = &Row{rs: it.rows[0]}
	it.rows = it.rows[1:]
	return true
}
func (it *rowIter) Done() {}

// Get implements starlark.Mapping: T[node_id] is the node's row.
func (t *Table) Get(k starlark.Value) (starlark.Value, bool, error) {
	id, ok := starlark.AsString(k)
	if !ok {
		return nil, false, fmt.Errorf("%s[%s]: want a node ID (a string)", t.name, k)
	}
	t.readNode(node.ID(id))
	rows := t.byNode[node.ID(id)]
	switch len(rows) {
	case 0:
		return nil, false, nil
	case 1:
		return &Row{rs: rows[0]}, true, nil
	}
	paths := make([]string, len(rows))
	for i, r := range rows {
		paths[i] = r.key.path
	}
	return nil, false, fmt.Errorf("%s[%q]: node %s has %d rows (paths %s); use %s.get(node, path=...)",
		t.name, id, id, len(rows), strings.Join(paths, ", "), t.name)
}

// Attr implements starlark.HasAttrs.
func (t *Table) Attr(name string) (starlark.Value, error) {
	switch name {
	case "name":
		return starlark.String(t.name), nil
	case "get":
		if t.getFn == nil { // made once: T.get is called in bodies at every step
			t.getFn = starlark.NewBuiltin(t.name+".get", t.get)
		}
		return t.getFn, nil
	case "rows":
		if t.rowsFn == nil {
			t.rowsFn = starlark.NewBuiltin(t.name+".rows", t.nodeRows)
		}
		return t.rowsFn, nil
	case "prev", "history", "node", "path":
		// A row's attribute asked of the table: say where it is.
		return nil, fmt.Errorf("table(%q) has no .%s: %s is an attribute of its rows (TABLE.get(NODE).%s, or r.%s for each r in TABLE)", t.name, name, name, name, name)
	}
	return nil, nil
}

func (t *Table) AttrNames() []string { return []string{"get", "name", "rows"} }

// nodeRows is T.rows(node_id): the node's rows, ordered by path as
// iteration orders them (a tuple; empty for a node without rows). An accumulator folds in the rows of the node
// that ran (T.rows(event.node)) instead of looping over the whole table.
func (t *Table) nodeRows(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var id string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "node", &id); err != nil {
		return nil, err
	}
	t.readNode(node.ID(id))
	rs := slices.Clone(t.byNode[node.ID(id)])
	slices.SortFunc(rs, func(a, b *rowState) int { return node.CompareNatural(a.key.path, b.key.path) })
	out := make(starlark.Tuple, len(rs))
	for i, r := range rs {
		out[i] = &Row{rs: r}
	}
	return out, nil
}

func (t *Table) get(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var id string
	var path starlark.Value = starlark.None
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "node", &id, "path?", &path); err != nil {
		return nil, err
	}
	t.readNode(node.ID(id))
	for _, r := range t.byNode[node.ID(id)] {
		if path == starlark.None {
			return &Row{rs: r}, nil
		}
		if p, ok := starlark.AsString(path); ok && p == r.key.path {
			return &Row{rs: r}, nil
		}
	}
	return starlark.None, nil
}

// Row is one object of a table's type in one node's state.
type Row struct{ rs *rowState }

var (
	_ starlark.HasAttrs   = (*Row)(nil)
	_ starlark.Comparable = (*Row)(nil)
)

func (r *Row) String() string {
	return fmt.Sprintf("%s(node=%q, path=%q)", r.rs.table.name, r.rs.key.node, r.rs.key.path)
}
func (r *Row) Type() string          { return "row" }
func (r *Row) Freeze()               {}
func (r *Row) Truth() starlark.Bool  { return true }
func (r *Row) Hash() (uint32, error) { return uint32(r.rs.id), nil }
func (r *Row) CompareSameType(op syntax.Token, y starlark.Value, _ int) (bool, error) {
	same := r.rs.key == y.(*Row).rs.key && r.rs.table == y.(*Row).rs.table
	switch op {
	case syntax.EQL:
		return same, nil
	case syntax.NEQ:
		return !same, nil
	}
	return false, fmt.Errorf("rows support only == and !=")
}

// Attr implements starlark.HasAttrs: node, path, prev, history and the
// object's fields.
func (r *Row) Attr(name string) (starlark.Value, error) {
	rs := r.rs
	switch name {
	case "node":
		return starlark.String(rs.key.node), nil
	case "path":
		return starlark.String(rs.key.path), nil
	case "prev":
		return starlark.NewBuiltin("prev", r.prev), nil
	case "history":
		return starlark.NewBuiltin("history", r.history), nil
	}
	col, ok := rs.table.column(rs.v.Type(), name)
	if !ok {
		if _, observed := state.FieldByName(rs.v.Type(), name); observed {
			// The Go type has it: the script left it out.
			return nil, starlark.NoSuchAttrError(fmt.Sprintf("row of table(%q) has no .%s: the field is left out by the table's columns= (add %q there to read it)", rs.table.name, name, name))
		}
		// Starlark's own hint allows edits under half the name's length:
		// two swapped letters of a short one (.Lgo) got none.
		if names := r.AttrNames(); !starlarkHints(name, names) {
			if near := nearest.Typo(names, name); near != "" {
				return nil, starlark.NoSuchAttrError(fmt.Sprintf("row has no .%s field or method (did you mean .%s?)", name, near))
			}
		}
		return nil, nil
	}
	c := rs.table.c
	fv := rs.v.Field(col.index)
	if col.view && col.chained {
		// Reads are recorded as the view is used: by index they depend
		// only on the elements, which appending leaves as they were.
		return rs.view(col, name, fv), nil
	}
	c.read(dep{depCol, rs.id, col.num})
	if col.view && fv.Kind() == reflect.Map {
		return &mapView{view{c: c, v: fv, table: rs.table, name: name, step: c.step}}, nil
	}
	if col.view {
		return rs.view(col, name, fv), nil
	}
	return toStarlark(fv, c.start), nil
}

// view returns the row's view of a column, made once per step: bodies
// read the same log several times in a step.
func (rs *rowState) view(col colInfo, name string, fv reflect.Value) *listView {
	c := rs.table.c
	for len(rs.views) <= col.num {
		rs.views = append(rs.views, nil)
	}
	if l := rs.views[col.num]; l != nil && l.step == c.step {
		return l
	}
	l := &listView{view: view{c: c, v: fv, table: rs.table, name: name, step: c.step}}
	if col.chained {
		l.rs, l.num = rs, col.num
	}
	rs.views[col.num] = l
	return l
}

// colInfo is what reading a column by name needs, resolved once per Go
// type and name.
type colInfo struct {
	index   int  // for reflect.Value.Field
	num     int  // colNum; 0: no such column
	view    bool // declared in views= (and a list, or a map of scalar keys)
	chained bool // declared in chained= (and a list)
}

// column resolves a column of Go type ty by name: false when the name is
// no column of the table (not an observed field, or not in columns=).
func (t *Table) column(ty reflect.Type, name string) (colInfo, bool) {
	byName := t.colInfos[ty]
	if byName == nil {
		if t.colInfos == nil {
			t.colInfos = map[reflect.Type]map[string]colInfo{}
		}
		byName = map[string]colInfo{}
		t.colInfos[ty] = byName
	}
	if col, ok := byName[name]; ok {
		return col, col.num != 0
	}
	var col colInfo
	if f, ok := state.FieldByName(ty, name); ok && t.hasColumn(name) {
		ft := ty.Field(f.Index).Type
		list := ft.Kind() == reflect.Slice || ft.Kind() == reflect.Array
		col = colInfo{index: f.Index, num: t.colNum(name),
			view:    slices.Contains(t.views, name) && (list || viewableMap(ft)),
			chained: slices.Contains(t.chained, name) && list}
	}
	byName[name] = col // an unknown name is remembered too
	return col, col.num != 0
}

// starlarkHints reports whether Starlark's spelling hint names one of
// names for a missing attribute name (go.starlark.net/internal/spell:
// case and underscores aside, fewer edits than half the name's length).
func starlarkHints(name string, names []string) bool {
	fold := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '_' {
				return -1
			}
			return unicode.ToLower(r)
		}, s)
	}
	x := fold(name)
	for _, n := range names {
		if nearest.Distance(x, fold(n)) < (len(x)+1)/2 {
			return true
		}
	}
	return false
}

func (r *Row) AttrNames() []string {
	names := []string{"history", "node", "path", "prev"}
	return append(names, fieldNames(r.rs.table.columnsOf(r.rs.v.Type()))...)
}

// readNode records that the evaluation looked up node id's rows: it is
// re-run when that node's rows come or go, not when another node's do.
// A name that is no node of the trace never has rows: nothing to track.
func (t *Table) readNode(id node.ID) {
	if i, ok := t.c.nodeIdx[id]; ok {
		t.c.read(dep{depNodeRows, t.id, i})
	}
}

// colNum numbers a column name within the table (for depCol).
func (t *Table) colNum(name string) int {
	n, ok := t.nums[name]
	if !ok {
		if t.nums == nil {
			t.nums = map[string]int{}
		}
		n = len(t.nums) + 1
		t.nums[name] = n
	}
	return n
}

// readCol records that the evaluation read one column of the row.
func (rs *rowState) readCol(name string) {
	rs.table.c.read(dep{depCol, rs.id, rs.table.colNum(name)})
}

func (t *Table) hasColumn(name string) bool {
	return t.columns == nil || slices.Contains(t.columns, name)
}

// prev(FIELD, default): the field in the previous kept version.
func (r *Row) prev(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var field string
	var def starlark.Value = starlark.None
	if err := starlark.UnpackArgs("prev", args, kwargs, "field", &field, "default?", &def); err != nil {
		return nil, err
	}
	rs := r.rs
	rs.table.c.trackRead(item{kind: itemRowVersions, id: rs.table.id, key: rs.key})
	if err := rs.checkField("prev", field); err != nil {
		return nil, err
	}
	if rs.table.keep < 2 {
		// It would answer the default at every step: a predicate
		// comparing with the previous value would hold, silently.
		return nil, fmt.Errorf("prev(%q): table(%q) keeps only the current version (keep=1), so there is never a previous one; declare it with keep = 2", field, rs.table.name)
	}
	// A version is kept per change of the row, whichever column changed:
	// which version is the previous one depends on every column.
	rs.table.c.read(dep{depRow, rs.id, 0})
	vs := rs.hist.versions
	if len(vs) < 2 {
		return def, nil
	}
	if v, ok := vs[len(vs)-2].fields[field]; ok {
		return v, nil
	}
	return def, nil
}

// history(FIELD): the field's value in every kept version, oldest first.
func (r *Row) history(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var field string
	if err := starlark.UnpackArgs("history", args, kwargs, "field", &field); err != nil {
		return nil, err
	}
	rs := r.rs
	rs.table.c.trackRead(item{kind: itemRowVersions, id: rs.table.id, key: rs.key})
	if err := rs.checkField("history", field); err != nil {
		return nil, err
	}
	rs.table.c.read(dep{depRow, rs.id, 0}) // one entry per version: see prev

	var out []starlark.Value
	for _, v := range rs.hist.versions {
		if x, ok := v.fields[field]; ok {
			out = append(out, x)
		}
	}
	l := starlark.NewList(out)
	l.Freeze()
	return l, nil
}

// snapshot is a frozen copy of the row's current fields.
func (r *Row) snapshot() starlark.Value {
	r.rs.table.c.read(dep{depRow, r.rs.id, 0}) // every column is copied
	fields := starlark.StringDict{"node": starlark.String(r.rs.key.node), "path": starlark.String(r.rs.key.path)}
	return structSnapshot(&columnView{r.rs}, fields)
}

// columnView exposes a row's columns without recording dependencies.
type columnView struct{ rs *rowState }

func (c *columnView) Attr(name string) (starlark.Value, error) {
	if !c.rs.table.hasColumn(name) {
		return nil, nil
	}
	return fieldValue(c.rs.v, name, c.rs.table.c.start), nil
}
func (c *columnView) AttrNames() []string {
	return fieldNames(c.rs.table.columnsOf(c.rs.v.Type()))
}
func (c *columnView) String() string        { return "columns" }
func (c *columnView) Type() string          { return "columns" }
func (c *columnView) Freeze()               {}
func (c *columnView) Truth() starlark.Bool  { return true }
func (c *columnView) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable") }

// matches reports whether Go type t is the table's type. The scanner
// caches the answer per type.
func (t *Table) matches(ty reflect.Type) bool {
	if ty.Name() == "" {
		return false
	}
	return namesType(t.name, node.TypeName(ty)) || namesType(t.name, ty.PkgPath()+"."+ty.Name())
}

// columnsOf returns the table's columns in struct type ty, resolved once
// per type: every observed field, or those named by columns= (a name that
// is not an observed field was rejected when the script loaded).
func (t *Table) columnsOf(ty reflect.Type) []state.Field {
	if cols, ok := t.cols[ty]; ok {
		return cols
	}
	cols := state.Fields(ty)
	if t.columns != nil {
		cols = nil
		for _, name := range t.columns {
			if f, ok := state.FieldByName(ty, name); ok {
				cols = append(cols, f)
			}
		}
	}
	if t.cols == nil {
		t.cols = map[reflect.Type][]state.Field{}
		t.colNums = map[reflect.Type][]int{}
	}
	t.cols[ty] = cols
	nums := make([]int, len(cols))
	for i, f := range cols {
		nums[i] = t.colNum(f.Name)
	}
	t.colNums[ty] = nums
	return cols
}

// hashColumns hashes the row's columns, each separately, into hashes
// (grown to len(cols)).
func (t *Table) hashColumns(v reflect.Value, cols []state.Field, hashes []uint64) ([]uint64, uint64) {
	hashes = append(hashes[:0], make([]uint64, len(cols))...)
	var all uint64 = 14695981039346656037
	for i, f := range cols {
		if len(t.chained) > 0 && slices.Contains(t.chained, f.Name) {
			hashes[i] = chainHash(v.Field(f.Index))
		} else {
			hashes[i] = t.c.columnHash(v.Field(f.Index))
		}
		all = (all ^ hashes[i]) * 1099511628211
	}
	return hashes, all
}

// upsert records that the row at key holds v after step; it returns the
// row, whether it is new, and whether its content changed. t.touched then
// holds the numbers of the columns that changed (all of them for a new
// row or one whose Go type changed).
func (t *Table) upsert(key rowKey, v reflect.Value, gen, step int, now int64) (*rowState, bool, bool) {
	t.touched, t.grown = t.touched[:0], t.grown[:0]
	rs := t.rows[key]
	added := false
	if rs == nil {
		t.c.nextRow++
		rs = &rowState{id: t.c.nextRow, table: t, key: key}
		t.c.trackRead(item{kind: itemRowHist, id: t.id, key: key})
		rs.hist = t.history[key]
		if rs.hist == nil {
			rs.hist = &rowHistory{}
			t.history[key] = rs.hist
		}
		t.rows[key] = rs
		t.byNode[key.node] = append(t.byNode[key.node], rs)
		t.sorted = false
		t.logChange(rs, true)
		added = true
	}
	rs.v, rs.seen = v, gen
	cols := t.columnsOf(v.Type())
	// Most events leave the row as it was: hash into scratch space, and
	// keep a copy only of a new version.
	fields, h := t.hashColumns(v, cols, t.hashes)
	t.hashes = fields
	if !added && h == rs.hash {
		return rs, false, false
	}
	fields = slices.Clone(fields)
	rs.hash = h
	hist := rs.hist
	if len(hist.fields) > 0 && slices.Equal(hist.fields, fields) {
		// The same content as before a crash: not a new version.
		rs.typ = v.Type()
		return rs, added, false
	}
	t.c.trackRow(t, key, hist.fields, fields)
	if len(hist.fieldTime) != len(cols) {
		hist.fieldTime = make([]int64, len(cols))
	}
	for i := range cols {
		if i >= len(hist.fields) || hist.fields[i] != fields[i] {
			hist.fieldTime[i] = now
		}
	}
	nums := t.colNums[v.Type()]
	retyped := rs.typ != v.Type() || len(hist.fields) != len(fields)
	for i, n := range nums {
		if retyped || hist.fields[i] != fields[i] {
			t.touched = append(t.touched, n)
			if !retyped && t.appendOnly(v.Field(cols[i].Index), cols[i].Name, hist, i) {
				t.grown = append(t.grown, n)
			}
		}
	}
	rs.typ = v.Type()
	hist.fields = fields
	hist.lens = t.chainLens(v, cols, hist.lens)
	hist.changed = now
	if t.keep > 1 {
		snap := starlark.StringDict{}
		for _, f := range cols {
			snap[f.Name] = freeze(toStarlark(v.Field(f.Index), t.c.start))
		}
		hist.versions = append(hist.versions, version{step: step, fields: snap})
		if len(hist.versions) > t.keep {
			hist.versions = slices.Delete(hist.versions, 0, len(hist.versions)-t.keep)
		}
	} else {
		hist.versions = hist.versions[:0]
		hist.versions = append(hist.versions, version{step: step})
	}
	return rs, added, true
}

// appendOnly reports whether chained list column i changed only by
// elements appended after those it had: its element at the old last
// index digests the same list as the old last element did, so every
// element before it is as it was.
func (t *Table) appendOnly(list reflect.Value, name string, hist *rowHistory, i int) bool {
	if !slices.Contains(t.chained, name) || i >= len(hist.lens) {
		return false
	}
	n := hist.lens[i]
	if n == 0 {
		return true // nothing could be read by index from an empty list
	}
	return list.Len() >= n && chainHashAt(list, n) == hist.fields[i]
}

// chainLens records the length of each chained list column of v, for
// appendOnly; nil when the table declares none.
func (t *Table) chainLens(v reflect.Value, cols []state.Field, lens []int) []int {
	if len(t.chained) == 0 {
		return nil
	}
	lens = append(lens[:0], make([]int, len(cols))...)
	for i, f := range cols {
		if fv := v.Field(f.Index); slices.Contains(t.chained, f.Name) && (fv.Kind() == reflect.Slice || fv.Kind() == reflect.Array) {
			lens[i] = fv.Len()
		}
	}
	return lens
}

// drop takes a row out of the table (its node crashed, became unknown,
// or the object is gone) but not out of its node's list of rows (byNode),
// which the caller updates (setNodeRows); its history is kept for when
// the same row reappears.
func (t *Table) drop(rs *rowState) {
	rs.removed = true
	t.c.dropped++
	delete(t.rows, rs.key)
	t.sorted = false
	t.logChange(rs, false)
}

// setNodeRows sets the rows node id has in the table.
func (t *Table) setNodeRows(id node.ID, rows []*rowState) {
	if len(rows) == 0 {
		delete(t.byNode, id)
	} else {
		t.byNode[id] = rows
	}
}

// pathString builds row paths in the same form as state.Flatten.
func fieldPath(parent, field string) string {
	if parent == "" {
		return field
	}
	return parent + "." + field
}

func indexPath(parent string, i int) string { return parent + "[" + strconv.Itoa(i) + "]" }

// ColumnAdvice is a table declared without columns= whose rows have
// observed fields its predicates never read in a run: every change of a
// row hashes all of them (and with keep above 1, copies them), where
// naming the read ones in columns= would spare the rest.
type ColumnAdvice struct {
	Table  string   // as declared
	Keep   int      // as declared
	Fields int      // observed fields of its rows
	Read   []string // the fields the predicates read, in field order
	// Views and Chained are as declared.
	Views, Chained []string
	// Lists are the fields read that are lists or maps not declared
	// views=: each read copies them whole.
	Lists []string
}

// ColumnAdvice lists the tables worth declaring with columns=, judged by
// what the predicates read so far. A table whose fields were all read, or
// none (its rows only counted), is not listed.
func (c *Checker) ColumnAdvice() []ColumnAdvice {
	var out []ColumnAdvice
	for _, t := range c.tables {
		if t.columns != nil {
			continue
		}
		for ty, byName := range t.colInfos {
			fields := state.Fields(ty)
			var read, lists []string
			for _, f := range fields {
				if col, ok := byName[f.Name]; ok && col.num != 0 {
					read = append(read, f.Name)
					switch ty.Field(f.Index).Type.Kind() {
					case reflect.Slice, reflect.Array, reflect.Map:
						if !slices.Contains(t.views, f.Name) {
							lists = append(lists, f.Name)
						}
					}
				}
			}
			if len(read) > 0 && len(read) < len(fields) {
				out = append(out, ColumnAdvice{Table: t.name, Keep: t.keep, Fields: len(fields), Read: read, Views: t.views, Chained: t.chained, Lists: lists})
				break // a table's rows are of one Go type
			}
		}
	}
	return out
}

// Declaration is the table's declaration with columns= naming Read.
func (a ColumnAdvice) Declaration() string {
	list := func(names []string) string {
		quoted := make([]string, len(names))
		for i, n := range names {
			quoted[i] = strconv.Quote(n)
		}
		return "[" + strings.Join(quoted, ", ") + "]"
	}
	decl := fmt.Sprintf("table(%q, columns = %s", a.Table, list(a.Read))
	if a.Keep > 1 {
		decl += fmt.Sprintf(", keep = %d", a.Keep)
	}
	if len(a.Views) > 0 {
		decl += ", views = " + list(a.Views)
	}
	if len(a.Chained) > 0 {
		decl += ", chained = " + list(a.Chained)
	}
	return decl + ")"
}
