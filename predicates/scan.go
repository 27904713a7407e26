package predicates

import (
	"reflect"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/state"
)

// scanner finds the rows of every table in one node's state. It descends
// only into types that can contain a table's type, so a node's event costs
// time in proportion to the parts of its state predicates look at.
type scanner struct {
	c     *Checker
	reach map[reflect.Type]bool
	match map[reflect.Type][]*Table // the tables whose type a Go type is
	plans map[reflect.Type][]walkField
	seen  map[uintptr]bool
	gen   int
	step  int
	now   int64
	id    node.ID
	dirty []*rowState
}

func newScanner(c *Checker) *scanner {
	return &scanner{c: c, reach: map[reflect.Type]bool{}, match: map[reflect.Type][]*Table{},
		plans: map[reflect.Type][]walkField{}, seen: map[uintptr]bool{}}
}

// matching lists the tables whose type t is, computed once per type.
func (s *scanner) matching(t reflect.Type) []*Table {
	if m, ok := s.match[t]; ok {
		return m
	}
	var m []*Table
	for _, tb := range s.c.tables {
		if tb.matches(t) {
			m = append(m, tb)
		}
	}
	s.match[t] = m
	return m
}

// reaches reports whether a value of type t can hold an object of some
// table's type. Interfaces might hold anything.
//
// Types can be recursive (A holds *B, B holds *A), so the answer is a
// search over every type reachable from t, and only complete answers are
// cached: caching a provisional answer while a cycle is open would make
// which rows are found depend on which type happened to be asked first.
func (s *scanner) reaches(t reflect.Type) bool {
	if r, ok := s.reach[t]; ok {
		return r
	}
	seen := map[reflect.Type]bool{t: true}
	stack := []reflect.Type{t}
	push := func(u reflect.Type) {
		if !seen[u] {
			seen[u] = true
			stack = append(stack, u)
		}
	}
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if r, ok := s.reach[u]; ok {
			if r {
				s.reach[t] = true
				return true
			}
			continue // a cached false is complete: nothing below u matches
		}
		if u.Kind() == reflect.Interface || len(s.matching(u)) > 0 {
			s.reach[t] = true
			return true
		}
		switch u.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			push(u.Elem())
		case reflect.Struct:
			if !state.IsTime(u) {
				for i := range u.NumField() {
					if f := u.Field(i); f.Tag.Get("replay") != "-" {
						push(f.Type)
					}
				}
			}
		}
	}
	// Nothing reachable from t matches, so nothing reachable from any type
	// seen on the way does either.
	for u := range seen {
		s.reach[u] = false
	}
	return false
}

// walkField is a field of a struct type the scanner descends into.
type walkField struct {
	index int
	name  string
}

// fieldsOf lists the fields of struct type t that can hold a table's
// rows, found once per type (in plans): the walk runs after every event.
func (s *scanner) fieldsOf(t reflect.Type) []walkField {
	if fs, ok := s.plans[t]; ok {
		return fs
	}
	fs := []walkField{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Tag.Get("replay") == "-" || f.Name == "_" || !s.reaches(f.Type) {
			continue
		}
		fs = append(fs, walkField{i, f.Name})
	}
	s.plans[t] = fs
	return fs
}

// scan walks a node's handler and upserts the rows found; rows of the node
// not found any more are removed. changedRows receives rows whose content
// changed.
func (c *Checker) scanNode(id node.ID, h node.Handler) {
	s := c.scan
	s.gen++
	s.id, s.step, s.now = id, c.step, c.now
	clear(s.seen)
	if h != nil {
		s.walk(reflect.ValueOf(h), "", 0)
	}
	for _, t := range c.tables {
		for _, rs := range append([]*rowState(nil), t.byNode[id]...) {
			if rs.seen != s.gen {
				t.remove(rs)
				c.tableChanged(t, id)
			}
		}
	}
}

func (s *scanner) walk(v reflect.Value, path string, depth int) {
	if depth > 256 || !v.IsValid() {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || !s.reaches(v.Type()) {
			return
		}
		p := v.Pointer()
		if s.seen[p] {
			return // aliased: the object is a row once, at its first path
		}
		s.seen[p] = true
		s.walk(v.Elem(), path, depth+1)
		return
	case reflect.Interface:
		if !v.IsNil() {
			s.walk(v.Elem(), path, depth+1)
		}
		return
	}
	t := v.Type()
	if !s.reaches(t) {
		return
	}
	for _, tb := range s.matching(t) {
		rs, added, changed := tb.upsert(rowKey{s.id, path}, v, s.gen, s.step, s.now)
		if added {
			s.c.tableChanged(tb, s.id)
		}
		if changed {
			s.c.rowChanged(rs, tb.touched)
		}
	}
	switch v.Kind() {
	case reflect.Struct:
		for _, f := range s.fieldsOf(t) {
			s.walk(v.Field(f.index), fieldPath(path, f.name), depth+1)
		}
	case reflect.Slice, reflect.Array:
		if !s.reaches(t.Elem()) {
			return
		}
		for i := range v.Len() {
			s.walk(v.Index(i), indexPath(path, i), depth+1)
		}
	case reflect.Map:
		if v.IsNil() || !s.reaches(t.Elem()) {
			return
		}
		for _, k := range state.SortedKeys(v) {
			s.walk(v.MapIndex(k), path+"["+state.KeyString(k)+"]", depth+1)
		}
	}
}
