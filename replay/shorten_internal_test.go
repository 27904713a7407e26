package replay

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// An event line cut a message inside a multi-byte character (a broken
// "é" in `replay events`: an attack).
func TestShortenEndsOnACharacter(t *testing.T) {
	s := "main.Uni{Text:" + strings.Repeat("é", 100) + "}"
	for n := 10; n < 40; n++ {
		if got := shorten(s, n); !utf8.ValidString(got) || len(got) > n {
			t.Fatalf("shorten to %d: %q", n, got)
		}
	}
}
