package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/scripts"
	"github.com/replaycheck/replaycheck/system"
)

// TestBuiltinScriptResolution pins the rule every verb applies to a
// script argument (an existing file wins; builtin:NAME and a bare NAME.star
// are the embedded scripts) and that the embedded ones are loaded from a
// folder holding all of them, so a bundled script's load() of a sibling
// works, and which Run removes.
func TestBuiltinScriptResolution(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache) // os.UserCacheDir on Linux
	t.Chdir(t.TempDir())
	if err := os.WriteFile("raft.star", []byte("# mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := &App{builtins: &builtinDir{}}
	for _, c := range []struct {
		arg, path, name string // path "" with name set: the embedded script called name
	}{
		{"raft.star", "raft.star", "raft.star"}, // the file here wins
		{"./raft.star", "./raft.star", "./raft.star"},
		{"builtin:raft", "", "builtin:raft"}, // asked for by name: the embedded one
		{"paxos.star", "", "builtin:paxos"},
		{"builtin:chord.star", "", "builtin:chord"},
	} {
		ref, err := a.resolveScript(c.arg)
		if err != nil {
			t.Fatalf("%s: %v", c.arg, err)
		}
		if ref.Name != c.name {
			t.Errorf("%s: named %q, want %q", c.arg, ref.Name, c.name)
		}
		if c.path != "" {
			if ref.Path != c.path {
				t.Errorf("%s: loads %q, want %q", c.arg, ref.Path, c.path)
			}
			continue
		}
		want, _ := scripts.FS.ReadFile(strings.TrimPrefix(strings.TrimSuffix(c.name, ".star"), builtinPrefix) + ".star")
		got, err := os.ReadFile(ref.Path)
		if err != nil || !bytes.Equal(got, want) || len(want) == 0 {
			t.Errorf("%s: %s is not the embedded script (err %v)", c.arg, ref.Path, err)
		}
		// Every bundled script sits beside it, for load().
		for _, n := range bundledScripts() {
			if _, err := os.Stat(filepath.Join(filepath.Dir(ref.Path), n)); err != nil {
				t.Errorf("%s: sibling %s missing: %v", c.arg, n, err)
			}
		}
	}
	for _, c := range []struct{ arg, want string }{
		{"builtin:nosuch", "no such bundled script"},
		{"nosuch.star", "no bundled script is called nosuch.star"},
		{"dir/paxos.star", "the bundled script of that name is builtin:paxos"},
		{"paxos", "not a predicates script"},
		{"builtin:../paxos", "no such bundled script"},
		{"", "empty"},
	} {
		_, err := a.resolveScript(c.arg)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "builtin:transport") {
			t.Errorf("%q: error %v, want %q and the list of bundled scripts", c.arg, err, c.want)
		}
	}

	// The copy is in the user's cache directory, named by the embedded
	// scripts' hash: the same path for every command of this binary (the
	// debugger stores it with its results), restored if edited.
	ref, err := a.resolveScript("builtin:paxos")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(cache, "replaycheck", "scripts-"+bundleHash(), "paxos.star"); ref.Path != want {
		t.Fatalf("builtin:paxos is %s, want %s", ref.Path, want)
	}
	a.builtins.remove() // a cached copy stays
	if err := os.WriteFile(ref.Path, []byte("# edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := &App{builtins: &builtinDir{}}
	again, err := b.resolveScript("paxos.star")
	if err != nil || again.Path != ref.Path {
		t.Fatalf("second command: %v, %v; want the same path %s", again.Path, err, ref.Path)
	}
	if got, _ := os.ReadFile(again.Path); !bytes.Equal(got, mustEmbedded(t, "paxos.star")) {
		t.Fatalf("an edited copy was not restored: %q", got)
	}

	// No cache directory: a temporary copy, removed when the command ends.
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "")
	c := &App{builtins: &builtinDir{}}
	tmp, err := c.resolveScript("builtin:paxos")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(filepath.Dir(tmp.Path)), "replay-builtin-") {
		t.Fatalf("without a cache directory builtin:paxos is %s, want a temporary copy", tmp.Path)
	}
	c.builtins.remove()
	if _, err := os.Stat(filepath.Dir(tmp.Path)); !os.IsNotExist(err) {
		t.Fatalf("the temporary copy outlived the command: %v", err)
	}
}

func mustEmbedded(t *testing.T, name string) []byte {
	t.Helper()
	src, err := scripts.FS.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// A user's binary registers its own systems: the bundled scripts check
// replaycheck's examples, so they are neither offered in its errors nor
// run (a new user's DHT passed builtin:paxos, whose tables matched
// nothing).
func TestBundledScriptsOfSystemsNotRegistered(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Chdir(t.TempDir())
	own := &system.System{Name: "mydht", Codec: node.NewCodec(), New: func(node.ID, system.Config) node.Handler { return nil }}
	a := &App{builtins: &builtinDir{}, Registry: system.NewRegistry(own)}
	_, err := a.resolveScript("builtin:paxos")
	if err == nil || !strings.Contains(err.Error(), "checks replaycheck's example system paxos, which this binary does not register") {
		t.Errorf("builtin:paxos in a binary of mydht: %v", err)
	}
	_, err = a.resolveScript("mydht.star")
	if err == nil || strings.Contains(err.Error(), "builtin:paxos") || !strings.Contains(err.Error(), "none for the systems this binary registers") {
		t.Errorf("a missing script in a binary of mydht lists scripts of other systems: %v", err)
	}
}
