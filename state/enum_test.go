package state

import (
	"reflect"
	"strings"
	"testing"
)

type role int

func (r role) String() string { return [...]string{"follower", "candidate", "leader"}[r] }

type phase uint8

func (p phase) String() string {
	if p == 9 {
		return "bad\x1b[2J"
	}
	return "phase"
}

type ptrNamed int

func (p *ptrNamed) String() string { return "never shown" }

type enumState struct {
	Role    role
	role    role // unexported: read through a copy
	Unknown role // String panics: index out of range
	Phase   phase
	Odd     phase // String returns a control sequence
	Ptr     ptrNamed
	Plain   int
}

// An integer of a named type with a String method shows what String says
// beside the number ("2 (leader)"); before, the number alone sent the user
// to the source. A String that panics or says something unprintable shows
// the number alone, and pointer-receiver methods are not called.
func TestEnumsShowTheirNames(t *testing.T) {
	s := enumState{Role: 2, role: 1, Unknown: 7, Phase: 3, Odd: 9, Ptr: 4, Plain: 5}
	got := map[string]string{}
	for _, l := range Flatten(&s) {
		got[l.Path] = l.Value
	}
	want := map[string]string{"Role": "2 (leader)", "role": "1 (candidate)", "Unknown": "7", "Phase": "3 (phase)", "Odd": "9", "Ptr": "4", "Plain": "5"}
	for path, v := range want {
		if got[path] != v {
			t.Errorf("%s = %q, want %q (all: %v)", path, got[path], v, got)
		}
	}
	if strings.Contains(Scalar(reflectValue(role(0))), "(follower)") == false {
		t.Errorf("Scalar of role(0) = %q", Scalar(reflectValue(role(0))))
	}
}

func reflectValue(v any) reflect.Value { return reflect.ValueOf(v) }
