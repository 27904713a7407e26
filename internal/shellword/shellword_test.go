package shellword

import (
	"os/exec"
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"trace.lz4":         "trace.lz4",
		"dir/a-b_c.lz4":     "dir/a-b_c.lz4",
		"--param":           "--param",
		"x=1":               "x=1",
		"with space.lz4":    "'with space.lz4'",
		"it's":              `'it'\''s'`,
		"":                  "''",
		"$HOME":             "'$HOME'",
		"a\nb":              "'a\nb'",
		"builtin:paxos":     "builtin:paxos",
		"50%":               "50%",
		"semi;colon":        "'semi;colon'",
		"star*":             "'star*'",
		"back`tick`":        "'back`tick`'",
		"-x.lz4 (a flag?)":  "'-x.lz4 (a flag?)'",
		"tab\there":         "'tab\there'",
		"ünïcode.lz4":       "'ünïcode.lz4'",
		"question?":         "'question?'",
		"brace{1,2}":        "'brace{1,2}'",
		"tilde~":            "'tilde~'",
		"hash#":             "'hash#'",
		"pipe|":             "'pipe|'",
		"amp&":              "'amp&'",
		"lt<":               "'lt<'",
		`dq"`:               `'dq"'`,
		`bs\`:               `'bs\'`,
		"bang!":             "'bang!'",
		"paren(":            "'paren('",
		"bracket[":          "'bracket['",
		"caret^":            "'caret^'",
		"plus+comma,at@":    "plus+comma,at@",
		"dots..and/slashes": "dots..and/slashes",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}

// A path beginning with "-" pastes as the same file, not as a flag.
func TestPathOfADashName(t *testing.T) {
	if got := Path("-x.lz4"); got != "./-x.lz4" {
		t.Errorf("Path(-x.lz4) = %s", got)
	}
	if got := Path("-it's.lz4"); got != `'./-it'\''s.lz4'` {
		t.Errorf("Path(-it's.lz4) = %s", got)
	}
	if got := Paths([]string{"a.lz4", "-b.lz4", "c d.lz4"}); got != "a.lz4 ./-b.lz4 'c d.lz4'" {
		t.Errorf("Paths = %s", got)
	}
}

// What the shell makes of a quoted word is the word.
func TestQuotedWordsPasteBack(t *testing.T) {
	words := []string{"plain", "with space", "it's", "$HOME", "a\nb", "star*", "back`tick`", "bang!", `bs\`, ""}
	var line []string
	for _, w := range words {
		line = append(line, Quote(w))
	}
	out, err := exec.Command("sh", "-c", `for w in `+strings.Join(line, " ")+`; do printf '%s\0' "$w"; done`).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(got) != len(words) {
		t.Fatalf("the shell read %d words, want %d: %q", len(got), len(words), got)
	}
	for i := range words {
		if got[i] != words[i] {
			t.Errorf("word %d: the shell read %q, want %q", i, got[i], words[i])
		}
	}
}
