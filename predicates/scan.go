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
	seen  map[uintptr]bool
	gen   int
	step  int
	now   int64
	id    node.ID
	dirty []*rowState
}

func newScanner(c *Checker) *scanner {
	return &scanner{c: c, reach: map[reflect.Type]bool{}, match: map[reflect.Type][]*Table{}, seen: map[uintptr]bool{}}
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
func (s *scanner) reaches(t reflect.Type) bool {
	if r, ok := s.reach[t]; ok {
		return r
	}
	s.reach[t] = false // provisional, for recursive types
	r := len(s.matching(t)) > 0
	if !r {
		switch t.Kind() {
		case reflect.Interface:
			r = true
		case reflect.Pointer, reflect.Slice, reflect.Array:
			r = s.reaches(t.Elem())
		case reflect.Map:
			r = s.reaches(t.Elem())
		case reflect.Struct:
			if !state.IsTime(t) {
				for i := range t.NumField() {
					f := t.Field(i)
					if f.Tag.Get("replay") != "-" && s.reaches(f.Type) {
						r = true
						break
					}
				}
			}
		}
	}
	s.reach[t] = r
	return r
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
				c.tableChanged(t)
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
			s.c.tableChanged(tb)
		}
		if changed {
			s.c.rowChanged(rs)
		}
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Tag.Get("replay") == "-" || f.Name == "_" || !s.reaches(f.Type) {
				continue
			}
			s.walk(v.Field(i), fieldPath(path, f.Name), depth+1)
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
