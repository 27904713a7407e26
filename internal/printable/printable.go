// Package printable makes text from a trace or a result file safe to
// print on a terminal: what a recorded value, a node's name or a forged
// file holds must not move the cursor, set the window's title, write the
// clipboard (escape sequences), start a new line that reads as the
// tool's own, or reverse the text that follows (bidirectional controls).
package printable

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape returns s with every control character, line or paragraph
// separator and bidirectional formatting character written as a Go
// escape (\x1b, \u202e). Text without any is returned as it is.
func Escape(s string) string {
	if strings.IndexFunc(s, Unsafe) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case !Unsafe(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return b.String()
}

// Text is Escape for raw text that is printed unquoted (a message's
// fields, a timer's name): a backslash is written as \\ too, so that a
// value holding the four characters \x1b reads otherwise than one
// holding an escape character. (Quoted text, as in error lines, has its
// backslashes escaped by its quotes already.)
func Text(s string) string {
	if !strings.Contains(s, `\`) {
		return Escape(s)
	}
	return Escape(strings.ReplaceAll(s, `\`, `\\`))
}

// Unsafe reports what Escape escapes: controls (C0, DEL, C1), U+2028
// and U+2029, and the bidi embeddings, overrides and isolates
// (U+202A-U+202E, U+2066-U+2069) and marks (U+200E, U+200F, U+061C).
func Unsafe(r rune) bool {
	switch {
	case unicode.IsControl(r):
		return true
	case r == 0x2028 || r == 0x2029:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0x200e || r == 0x200f || r == 0x061c:
		return true
	}
	return false
}

// Cut is the longest prefix of s of at most n bytes that does not end
// inside a UTF-8 sequence: text cut at a byte count printed half a
// character (invalid UTF-8) before its "...".
func Cut(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:max(n, 0)]
}
