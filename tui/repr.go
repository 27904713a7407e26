package tui

import (
	"fmt"
	"strings"

	"github.com/dustin/go-humanize"
)

// maxDiffParts bounds how many element changes reprDiff lists.
const maxDiffParts = 8

// reprDiff says how a watch's value changed, element by element: its
// values are Starlark reprs, and a list, tuple or dict that changed in one
// element says which (`[2] "x5" → "x7"`, `["n1"][1] 3 → 4`, `[7] added:
// 1`) rather than printing both values whole. Values it cannot take apart
// are compared whole.
// maxDiffed bounds the values reprDiff takes apart (both together).
const maxDiffed = 1 << 20

func reprDiff(a, b string) []string {
	if len(a)+len(b) > maxDiffed {
		return []string{fmt.Sprintf("changed (%s: too long to compare part by part)", humanize.IBytes(uint64(len(b))))}
	}
	var out []string
	diffInto(&out, "", a, b)
	if len(out) > maxDiffParts {
		n := len(out) - maxDiffParts
		out = append(out[:maxDiffParts], fmt.Sprintf("and %d more", n))
	}
	return out
}

func diffInto(out *[]string, path, a, b string) {
	if a == b || len(*out) > maxDiffParts {
		return
	}
	ka, ia, okA := splitRepr(a)
	kb, ib, okB := splitRepr(b)
	if !okA || !okB || ka != kb {
		*out = append(*out, strings.TrimLeft(path+" ", " ")+a+" → "+b)
		return
	}
	if ka == '{' {
		keysA, valsA := dictItems(ia)
		keysB, valsB := dictItems(ib)
		if keysA == nil || keysB == nil {
			*out = append(*out, strings.TrimLeft(path+" ", " ")+a+" → "+b)
			return
		}
		inB := map[string]string{}
		for i, k := range keysB {
			inB[k] = valsB[i]
		}
		inA := map[string]bool{}
		for i, k := range keysA {
			inA[k] = true
			if vb, ok := inB[k]; !ok {
				*out = append(*out, fmt.Sprintf("%s[%s] removed: %s", path, k, valsA[i]))
			} else {
				diffInto(out, fmt.Sprintf("%s[%s]", path, k), valsA[i], vb)
			}
		}
		for i, k := range keysB {
			if !inA[k] {
				*out = append(*out, fmt.Sprintf("%s[%s] added: %s", path, k, valsB[i]))
			}
		}
		return
	}
	// Elements added or removed in the middle (a node leaving a list of
	// rows) shift the rest: what both share at the start and at the end
	// is kept, so that the change reads as the removal it was, not as
	// every later element turning into the next one. The middles are
	// compared place by place.
	pre := 0
	for pre < min(len(ia), len(ib)) && ia[pre] == ib[pre] {
		pre++
	}
	suf := 0
	for suf < min(len(ia), len(ib))-pre && ia[len(ia)-1-suf] == ib[len(ib)-1-suf] {
		suf++
	}
	ma, mb := ia[pre:len(ia)-suf], ib[pre:len(ib)-suf]
	for i := range max(len(ma), len(mb)) {
		switch {
		case i >= len(ma):
			*out = append(*out, fmt.Sprintf("%s[%d] added: %s", path, pre+i, mb[i]))
		case i >= len(mb):
			*out = append(*out, fmt.Sprintf("%s[%d] removed: %s", path, pre+i, ma[i]))
		default:
			diffInto(out, fmt.Sprintf("%s[%d]", path, pre+i), ma[i], mb[i])
		}
	}
}

// splitRepr takes apart the repr of a list, tuple or dict: its opening
// bracket and its top-level elements (dict items as `key: value`).
func splitRepr(s string) (kind byte, items []string, ok bool) {
	if len(s) < 2 {
		return 0, nil, false
	}
	closing := map[byte]byte{'[': ']', '(': ')', '{': '}'}[s[0]]
	if closing == 0 || s[len(s)-1] != closing {
		return 0, nil, false
	}
	inner := s[1 : len(s)-1]
	if strings.TrimSpace(inner) == "" {
		return s[0], nil, true
	}
	parts, ok := splitTop(inner, ',')
	if !ok {
		return 0, nil, false
	}
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	if s[0] == '(' && len(parts) > 1 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1] // a one-element tuple: ("a",)
	}
	return s[0], parts, true
}

// dictItems splits `key: value` items (nil if one does not split).
func dictItems(items []string) (keys, vals []string) {
	keys, vals = []string{}, []string{}
	for _, it := range items {
		kv, ok := splitTop(it, ':')
		if !ok || len(kv) < 2 {
			return nil, nil
		}
		keys = append(keys, strings.TrimSpace(kv[0]))
		vals = append(vals, strings.TrimSpace(strings.Join(kv[1:], ":")))
	}
	return keys, vals
}

// splitTop splits s at sep where it is outside strings and brackets; ok
// is false when the quotes or brackets do not balance.
func splitTop(s string, sep byte) (parts []string, ok bool) {
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '[' || c == '(' || c == '{':
			depth++
		case c == ']' || c == ')' || c == '}':
			depth--
			if depth < 0 {
				return nil, false
			}
		case c == sep && depth == 0:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	if quote != 0 || depth != 0 {
		return nil, false
	}
	return append(parts, s[start:]), true
}
