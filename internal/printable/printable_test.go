package printable

import "testing"

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, ünïcode ✓":      "plain text, ünïcode ✓",
		"\x1b]0;title\x07":           `\x1b]0;title\x07`,
		"two\nlines\r":               `two\x0alines\x0d`,
		"rtl \u202eoverride\u202c":   `rtl \u202eoverride\u202c`,
		"line\u2028sep":              `line\u2028sep`,
		"c1 \u0085 next line":        `c1 \x85 next line`,
		"isolate \u2066x\u2069 mark": `isolate \u2066x\u2069 mark`,
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

// Unquoted text escapes its backslashes too: the text \x1b and an
// escape character print otherwise (a new user could not tell them apart
// in replay events).
func TestText(t *testing.T) {
	if a, b := Text(`a\x1bb`), Text("a\x1bb"); a == b || a != `a\\x1bb` || b != `a\x1bb` {
		t.Fatalf("Text of the literal %q and of the escape %q", a, b)
	}
	if Text("plain") != "plain" {
		t.Fatal("plain text changed")
	}
}

func TestCutEndsOnARune(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"héllo", 2, "h"}, {"héllo", 3, "hé"}, {"héllo", 99, "héllo"}, {"é", 1, ""}, {"abc", 0, ""}, {"abc", -1, ""},
	} {
		if got := Cut(c.s, c.n); got != c.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
