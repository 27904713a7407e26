package predicates_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/predicates"
)

// A mistyped column of a row is named with the column meant, even when
// it is two letters swapped (Starlark's own hint takes one edit at most
// for a short name: a new user's .Lgo for .Log read "row has no .Lgo
// field or method" and nothing more).
func TestMistypedColumnSaysWhichWasMeant(t *testing.T) {
	script := `
Holder = table("predicates_test.holdsAny")
safety("Typo", lambda: forall(Holder, lambda h: h.Bxo != None))
safety("Near", lambda: forall(Holder, lambda h: h.Hld != None))
`
	c, err := predicates.LoadSource("t.star", []byte(script), simReplayer(t, interfaceSystem()), predicates.Options{To: -1})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := c.Run(predicates.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	all := fmt.Sprint(rep.Errors)
	if !strings.Contains(all, "row has no .Bxo field or method (did you mean .Box?)") {
		t.Fatalf("errors %v: want the column meant named", rep.Errors)
	}
	// One hint, Starlark's, where Starlark finds one.
	if !strings.Contains(all, "row has no .Hld field or method (did you mean .Held?)") || strings.Count(all, "did you mean") != 2 {
		t.Fatalf("errors %v: want one hint each", rep.Errors)
	}
}
