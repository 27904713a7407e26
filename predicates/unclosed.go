package predicates

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"go.starlark.net/syntax"
)

// withOpenBracket adds to a syntax error that wants a closing bracket
// (or a comma between elements) where the bracket it would close was opened, when that is on an
// earlier line: Starlark reports an unclosed "(" where the parser gave
// up, often lines further down ("14:7: got identifier, want ')'" for a
// "(" on line 11).
func withOpenBracket(err error, src []byte) error {
	var se syntax.Error
	if !errors.As(err, &se) || !wantsCloser(se.Msg) {
		return err
	}
	line, col, ch, ok := openBracket(src, int(se.Pos.Line), int(se.Pos.Col))
	if !ok || line >= int(se.Pos.Line) {
		return err
	}
	se.Msg += fmt.Sprintf(" (the %q on line %d, column %d, is not closed)", ch, line, col)
	return se
}

// wantsCloser reports whether a syntax error's message wants what ends
// an element inside brackets: the closing bracket, or a comma before the
// next element (an unclosed "table(" runs into the next line's name).
func wantsCloser(msg string) bool {
	for _, want := range []string{"want ')'", "want ']'", "want '}'", "want ','"} {
		if strings.Contains(msg, want) {
			return true
		}
	}
	return false
}

// openBracket scans src up to line:col (1-based) and returns the
// innermost bracket still open there, skipping strings and comments.
func openBracket(src []byte, atLine, atCol int) (line, col int, ch byte, ok bool) {
	type opener struct {
		line, col int
		ch        byte
	}
	var open []opener
	l, c := 1, 1
	for i := 0; i < len(src); i++ {
		if l > atLine || l == atLine && c >= atCol {
			break
		}
		b := src[i]
		switch {
		case b == '\n':
			l, c = l+1, 1
			continue
		case b == '#':
			for i+1 < len(src) && src[i+1] != '\n' {
				i++
			}
		case b == '"' || b == '\'':
			quote := []byte{b}
			if bytes.HasPrefix(src[i:], []byte{b, b, b}) {
				quote = []byte{b, b, b}
			}
			raw := i > 0 && (src[i-1] == 'r' || src[i-1] == 'R')
			j := i + len(quote)
			for j < len(src) && !bytes.HasPrefix(src[j:], quote) {
				if src[j] == '\\' && !raw {
					j++
				} else if src[j] == '\n' {
					if len(quote) == 1 {
						break // unterminated: the parser says so itself
					}
					l, c = l+1, 0
				}
				j++
				c++
			}
			c += len(quote) * 2
			i = j + len(quote) - 1
			continue
		case b == '(' || b == '[' || b == '{':
			open = append(open, opener{l, c, b})
		case b == ')' || b == ']' || b == '}':
			if len(open) > 0 {
				open = open[:len(open)-1]
			}
		}
		c++
	}
	if len(open) == 0 {
		return 0, 0, 0, false
	}
	o := open[len(open)-1]
	return o.line, o.col, o.ch, true
}
