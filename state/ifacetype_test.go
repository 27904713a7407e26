package state

import "testing"

type joinState interface{ joined() bool }

type joining struct{ At, Since int }
type joined struct{ Since, Took int }

func (*joining) joined() bool { return false }
func (*joined) joined() bool  { return true }

type joiner struct {
	Join  joinState
	Inbox []any
	Seen  *joined
	Again any
}

// An interface holding a struct shows which type it holds: a Joining that
// became a Joined read as fields removed and added, and two types with
// fields of one name not at all.
func TestInterfacesShowTheTypeTheyHold(t *testing.T) {
	j := &joined{Since: 1, Took: 2}
	s := &joiner{Join: &joining{At: 3, Since: 1}, Inbox: []any{joined{4, 5}, 7, nil}, Seen: j, Again: j}
	leaves := func() map[string]string {
		m := map[string]string{}
		for _, l := range Flatten(s) {
			m[l.Path] = l.Value
		}
		return m
	}
	got := leaves()
	for path, want := range map[string]string{
		"Join.(type)":     "*state.joining",
		"Join.At":         "3",
		"Inbox[0].(type)": "state.joined",
		"Inbox[0].Took":   "5",
		"Inbox[1]":        "7",
		"Again":           "(same as Seen)",
	} {
		if got[path] != want {
			t.Errorf("%s = %q, want %q (all: %v)", path, got[path], want, got)
		}
	}
	for _, p := range []string{"Inbox[1].(type)", "Inbox[2].(type)", "Again.(type)"} {
		if _, ok := got[p]; ok {
			t.Errorf("%s shown: only a struct whose fields show below has its type shown", p)
		}
	}
	if c, _ := Composite(Flatten(s), "Join"); c != "{2 fields}" {
		t.Errorf("Join is described as %q: the type is no field", c)
	}
	before := Flatten(s)
	s.Join = &joined{Since: 1, Took: 9}
	changed := map[string][2]string{}
	for _, c := range Diff(before, Flatten(s)) {
		changed[c.Path] = [2]string{c.Old, c.New}
	}
	if changed["Join.(type)"] != [2]string{"*state.joining", "*state.joined"} {
		t.Errorf("the change of type is not in the diff: %v", changed)
	}
}
