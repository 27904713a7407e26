package predicates

import (
	"strings"
	"testing"
)

// Starlark reports an unclosed bracket where the parser gave up, lines
// after it (a new user's "(" on line 11 was reported at 14:7); the error
// now says where the bracket was opened. Brackets in strings and
// comments do not count.
func TestUnclosedBracketIsNamed(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"def f():\n    return (1 +\n\nsafety(\"x\", lambda: True)\n", "the '(' on line 2, column 12, is not closed"},
		{"x = [1, 2,  # a ( in a comment\n  \"]\" + ''')(''',\ny = 3\n", "the '[' on line 1, column 5, is not closed"},
		{"d = {\"a\": (1,\n 2)\nsafety(\"x\", lambda: True)\n", "the '{' on line 1, column 5, is not closed"},
		// The parser wants a comma here, not the bracket (a new user's
		// unclosed table( call).
		{"P = table(\"tpc.PTx\"\nsafety(\"X\", lambda: True)\n", "the '(' on line 1, column 10, is not closed"},
	} {
		_, err := fileOptions.Parse("s.star", []byte(c.src), 0)
		if err == nil {
			t.Fatalf("%q parsed", c.src)
		}
		if got := withOpenBracket(err, []byte(c.src)).Error(); !strings.Contains(got, c.want) {
			t.Errorf("%q: %s, want %q", c.src, got, c.want)
		}
	}
	// A comma missing inside a call that is closed later: the call's
	// bracket is closed, and no hint says otherwise (a hostile pass).
	src0 := "P = table(\"tpc.PTx\"\n    columns = [\"Tx\"])\nsafety(\"x\", lambda: True)\n"
	if _, err := fileOptions.Parse("s.star", []byte(src0), 0); err == nil {
		t.Fatal("a call missing a comma parsed")
	} else if got := withOpenBracket(err, []byte(src0)).Error(); strings.Contains(got, "is not closed") {
		t.Errorf("missing comma: %s", got)
	}
	// A bracket opened on the line of the error needs no pointer.
	src := "safety(\"x\", lambda: True]\n"
	_, err := fileOptions.Parse("s.star", []byte(src), 0)
	if got := withOpenBracket(err, []byte(src)).Error(); strings.Contains(got, "is not closed") {
		t.Errorf("same line: %s", got)
	}
}
