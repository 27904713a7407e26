package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The binary as `go install` leaves it: run from a directory with no
// checkout around it. These tests start from an empty directory, so any
// path into scripts/ or any file the demo drops in the current directory
// shows up as a failure.

// runIn runs the built binary in dir with extra environment.
func runIn(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(replayBin, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	return runCmd(t, cmd)
}

// shell runs a command line the binary printed, as a user would paste it:
// through sh, with `replay` on PATH, from dir.
func shell(t *testing.T, dir string, env []string, line string) result {
	t.Helper()
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append(env, "PATH="+filepath.Dir(replayBin)+string(os.PathListSeparator)+os.Getenv("PATH"))...)
	return runCmd(t, cmd)
}

func mustBeEmpty(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("left in the current directory: %s", e.Name())
	}
}

// printed finds the indented command line starting with prefix.
func printed(t *testing.T, out, prefix string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, prefix) {
			return l
		}
	}
	t.Fatalf("no %q line in:\n%s", prefix, out)
	return ""
}

func TestInstallDemoWritesToATempDir(t *testing.T) {
	cwd := t.TempDir()
	// The demo's temporary directory lands under TMPDIR: one with a space
	// in its name checks that the printed commands are quoted.
	tmp := filepath.Join(t.TempDir(), "with space")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"TMPDIR=" + tmp, "XDG_CACHE_HOME=" + t.TempDir()}
	r := runIn(t, cwd, env, "demo")
	mustOK(t, r)
	mustBeEmpty(t, cwd)
	m := regexp.MustCompile(`The demo's files go to (.+) \(a fresh temporary directory`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("demo does not say where its files went:\n%s", r.stdout)
	}
	dir := m[1]
	if !filepath.IsAbs(dir) || filepath.Dir(dir) != tmp {
		t.Fatalf("demo wrote to %q, want a new directory in TMPDIR %q", dir, tmp)
	}
	for _, f := range []string{"replay-demo.lz4", "replay-demo.star"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("demo's %s: %v", f, err)
		}
	}
	// Every printed command works from the current directory (and from
	// any other: the paths are absolute), pasted into a shell.
	if r := shell(t, cwd, env, printed(t, r.stdout, "replay events ")); r.code != 0 || !strings.Contains(r.stdout, "#") {
		t.Fatalf("printed events command: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := shell(t, cwd, env, strings.TrimSuffix(strings.TrimPrefix(printed(t, r.stdout, "(replay check "), "("), " exits 1 on this trace.)")); r.code != 1 {
		t.Fatalf("printed check command: exit %d, want 1 (the violation)\n%s%s", r.code, r.stdout, r.stderr)
	}
	// replay debug needs a terminal; index takes the same files and flags.
	debug := printed(t, r.stdout, "replay debug ")
	index := regexp.MustCompile(` --at \d+$`).ReplaceAllString(strings.Replace(debug, "replay debug", "replay index", 1), "")
	if r := shell(t, cwd, env, index); r.code != 0 || !strings.Contains(r.stdout, "1 violation(s)") {
		t.Fatalf("printed debug command's files (%s): exit %d\n%s%s", index, r.code, r.stdout, r.stderr)
	}
	// The index lives beside the trace, not here.
	mustBeEmpty(t, cwd)

	// --dir: exactly there, created if missing.
	r = runIn(t, cwd, env, "demo", "--dir", "sub/d")
	mustOK(t, r)
	if _, err := os.Stat(filepath.Join(cwd, "sub", "d", "replay-demo.lz4")); err != nil {
		t.Fatalf("demo --dir sub/d: %v\n%s", err, r.stdout)
	}
	if !strings.Contains(r.stdout, "replay check sub/d/replay-demo.lz4 sub/d/replay-demo.star") {
		t.Fatalf("demo --dir sub/d does not name its files from here:\n%s", r.stdout)
	}
	badInput(t, runIn(t, cwd, env, "demo", "--dir", ""), "--dir")
}

func TestInstallBuiltinScripts(t *testing.T) {
	cwd := t.TempDir()
	// The copies of the embedded scripts go to the user's cache directory
	// (XDG_CACHE_HOME on Linux): this test's own.
	cache := t.TempDir()
	env := []string{"TMPDIR=" + t.TempDir(), "XDG_CACHE_HOME=" + cache}
	// A hunt with the bundled paxos script, named as a bare file that is
	// not here.
	r := runIn(t, cwd, env, "sim", "paxos", "--bug", "spec", "--seeds", "1-20", "--check", "paxos.star", "-o", "x.lz4")
	if r.code != 1 || !strings.Contains(r.stdout, "wrote x.lz4") {
		t.Fatalf("hunt with paxos.star: exit %d, want 1 (a violation)\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Its next step names the script in a way that means the bundled one
	// from any directory.
	debug := printed(t, r.stdout, "debug:")
	if !strings.Contains(debug, "--preds builtin:paxos") {
		t.Fatalf("hunt's debug command does not name builtin:paxos: %s", debug)
	}
	for _, script := range []string{"builtin:paxos", "paxos.star", "builtin:paxos.star"} {
		r = runIn(t, cwd, env, "check", "x.lz4", script)
		if r.code != 1 || !strings.Contains(r.stdout, "violated at step #") || !strings.Contains(r.stdout, "--preds builtin:paxos") {
			t.Fatalf("check x.lz4 %s: exit %d, want 1\n%s%s", script, r.code, r.stdout, r.stderr)
		}
	}
	// The other verbs that take a script, positional or flag.
	mustOK(t, runIn(t, cwd, env, "index", "x.lz4", "--preds", "builtin:paxos"))
	mustOK(t, runIn(t, cwd, env, "report", "x.lz4", "builtin:paxos", "-o", "r.html"))
	mustOK(t, runIn(t, cwd, env, "export", "x.lz4", "--format", "jsonl", "--preds", "paxos.star", "-o", "x.jsonl"))
	if r := runIn(t, cwd, env, "explore", "paxos", "--bug", "spec", "--check", "builtin:paxos", "--budget", "2", "-o", "e.lz4"); r.code != 0 && r.code != 1 {
		t.Fatalf("explore --check builtin:paxos: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	html, err := os.ReadFile(filepath.Join(cwd, "r.html"))
	if err != nil || !bytes.Contains(html, []byte("builtin:paxos")) || bytes.Contains(html, []byte("replay-builtin-")) {
		t.Fatalf("report's commands should name builtin:paxos, not the temporary copy (err %v)", err)
	}

	// An unknown bundled name: exit 2, one line, the bundled ones listed.
	for _, bad := range [][]string{
		{"check", "x.lz4", "builtin:nosuch"},
		{"check", "x.lz4", "nosuch.star"},
		{"sim", "paxos", "--seeds", "1-2", "--check", "builtin:nosuch"},
		{"index", "x.lz4", "--preds", "builtin:nosuch"},
	} {
		badInput(t, runIn(t, cwd, env, bad...), "nosuch", "builtin:paxos", "builtin:raft", "builtin:chord")
	}
	// A missing path is the user's file gone, not a bundled script; the
	// message says which bundled one has that name.
	badInput(t, runIn(t, cwd, env, "check", "x.lz4", "scripts/paxos.star"), "scripts/paxos.star", "builtin:paxos")

	// An existing file wins over the bundled script of the same name.
	mine := "safety(\"Mine\", lambda: True)\n"
	if err := os.WriteFile(filepath.Join(cwd, "paxos.star"), []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runIn(t, cwd, env, "check", "x.lz4", "paxos.star")
	if r.code != 0 || !strings.Contains(r.stdout, "Mine") {
		t.Fatalf("check with ./paxos.star present should check that file: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runIn(t, cwd, env, "check", "x.lz4", "builtin:paxos"); r.code != 1 {
		t.Fatalf("builtin:paxos with ./paxos.star present: exit %d, want 1 (the bundled script)\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The copy the commands loaded is in the cache, one folder for all of
	// them (the debugger re-checks from the stored path later); nothing is
	// left in TMPDIR.
	copies, _ := filepath.Glob(filepath.Join(cache, "replaycheck", "scripts-*", "paxos.star"))
	if len(copies) != 1 {
		t.Errorf("copies of the bundled paxos.star in the cache: %v, want one", copies)
	}
	tmpEntries, _ := os.ReadDir(strings.TrimPrefix(env[0], "TMPDIR="))
	for _, e := range tmpEntries {
		t.Errorf("left behind in TMPDIR: %s", e.Name())
	}

	// Without a cache directory the copy is the command's own, and goes
	// with it.
	noCache := []string{"TMPDIR=" + t.TempDir(), "XDG_CACHE_HOME=", "HOME="}
	if r := runIn(t, cwd, noCache, "check", "x.lz4", "builtin:paxos"); r.code != 1 {
		t.Fatalf("check without a cache directory: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	tmpEntries, _ = os.ReadDir(strings.TrimPrefix(noCache[0], "TMPDIR="))
	for _, e := range tmpEntries {
		t.Errorf("left behind in TMPDIR without a cache directory: %s", e.Name())
	}
}

// TestInstallGoInstall is the README's `go install`: the binary it puts in
// GOBIN runs the demo with nothing of the checkout beside it.
func TestInstallGoInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: go install builds the whole binary again (tens of seconds uncached)")
	}
	bin := t.TempDir()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	install := exec.Command("go", "install", "./cmd/replay")
	install.Dir = root
	install.Env = append(os.Environ(), "GOBIN="+bin)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("GOBIN=%s go install ./cmd/replay: %v\n%s", bin, err, out)
	}
	exe := filepath.Join(bin, "replay")
	if _, err := os.Stat(exe); err != nil {
		t.Fatalf("go install left no replay in GOBIN: %v", err)
	}
	cwd := t.TempDir()
	demo := exec.Command(exe, "demo", "--dir", filepath.Join(bin, "d"))
	demo.Dir = cwd
	out, err := demo.CombinedOutput()
	if err != nil {
		t.Fatalf("installed replay demo: %v\n%s", err, out)
	}
	for _, f := range []string{"replay-demo.lz4", "replay-demo.star"} {
		if _, err := os.Stat(filepath.Join(bin, "d", f)); err != nil {
			t.Fatalf("installed replay demo --dir: %v\n%s", err, out)
		}
	}
	if !bytes.Contains(out, []byte("violated at step #")) {
		t.Fatalf("installed replay demo found no violation:\n%s", out)
	}
	mustBeEmpty(t, cwd)
}

// TestInstallHelp: the rule for naming a script is in the help of every
// verb that takes one, with the bundled names, and demo's help says where
// its files go.
func TestInstallHelp(t *testing.T) {
	dir := t.TempDir()
	for _, verb := range []string{"check", "critical", "predict", "report", "shrink", "explore", "index", "debug", "export", "sim"} {
		r := replay(t, dir, verb, "--help")
		mustOK(t, r)
		for _, w := range []string{"builtin:NAME", "An existing file wins", "paxos, raft"} {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("replay %s --help lacks %q", verb, w)
			}
		}
	}
	r := replay(t, dir, "demo", "--help")
	mustOK(t, r)
	for _, w := range []string{"--dir", "temporary directory"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("replay demo --help lacks %q", w)
		}
	}
}
