package vet

import (
	"strings"
	"testing"
)

// A finding's path names at most maxVia functions: the first and the
// last ones before the hazard. Whole paths made a chain of 20,000
// functions cost gigabytes of strings (a hostile pass).
func TestViaIsBounded(t *testing.T) {
	rest := ""
	for i := 200; i >= 1; i-- {
		rest = via("f"+strings.Repeat("x", i%3)+string(rune('a'+i%26)), rest)
	}
	hops := strings.Split(rest, " → ")
	if len(hops) > maxVia || hops[1] != "…" {
		t.Fatalf("a path of 200 functions reads %q", rest)
	}
	if short := via("a", via("b", "c")); short != "a → b → c" {
		t.Fatalf("a short path reads %q", short)
	}
}
