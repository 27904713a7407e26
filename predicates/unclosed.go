package predicates

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
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
	open := openBrackets(src, int(se.Pos.Line), int(se.Pos.Col))
	if len(open) == 0 {
		return err
	}
	o := open[len(open)-1]
	// Only a bracket the rest of the file does not close either: a
	// missing comma inside a call that is closed later wants ',' too.
	if o.line >= int(se.Pos.Line) || !slices.Contains(openBrackets(src, math.MaxInt, 0), o) {
		return err
	}
	se.Msg += fmt.Sprintf(" (the %q on line %d, column %d, is not closed)", o.ch, o.line, o.col)
	return se
}

// opener is a bracket opened at line:col.
type opener struct {
	line, col int
	ch        byte
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

// openBrackets scans src up to line:col (1-based) and returns the
// brackets still open there, innermost last, skipping strings and
// comments.
func openBrackets(src []byte, atLine, atCol int) []opener {
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
	return open
}
