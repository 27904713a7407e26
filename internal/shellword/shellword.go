// Package shellword quotes the words of the commands the tool prints for
// a user to paste into a shell: a word that a shell reads as itself is
// left alone, any other is put in single quotes.
package shellword

import "strings"

// Quote leaves a word made of characters a shell reads as themselves
// alone and puts any other in single quotes.
func Quote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./+,:=@%", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Path is Quote for a file's path: one that begins with "-" is written
// "./-..." (the same file), or a command read it as a flag, quoted or not.
func Path(p string) string {
	if strings.HasPrefix(p, "-") {
		p = "./" + p
	}
	return Quote(p)
}

// Paths quotes paths (Path) and joins them with spaces.
func Paths(ps []string) string {
	q := make([]string, len(ps))
	for i, p := range ps {
		q[i] = Path(p)
	}
	return strings.Join(q, " ")
}
