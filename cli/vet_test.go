package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/examples"
)

func runVetCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	app := &App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
	code = app.Run(append([]string{"vet"}, args...))
	return code, out.String(), errb.String()
}

// TestVetExamplesClean: every bundled system passes replay vet; a finding
// here is either a real nondeterminism bug in an example or a false
// positive of the analyzer, and both need a look.
func TestVetExamplesClean(t *testing.T) {
	code, out, errs := runVetCLI(t, "--json", "github.com/replaycheck/replaycheck/examples/...")
	if code != ExitOK {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	var rep vetReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, out)
	}
	if len(rep.Findings) != 0 || rep.Packages < len(examples.All()) {
		t.Fatalf("want no findings in at least %d packages, got %+v", len(examples.All()), rep)
	}
	// Every bundled system's handler was walked; a package without one
	// says that nothing was (a handler behind a build tag read as clean).
	if rep.Handlers < len(examples.All()) {
		t.Fatalf("%d handler types found in the examples, want at least %d", rep.Handlers, len(examples.All()))
	}
	code, _, errs = runVetCLI(t, "github.com/replaycheck/replaycheck/state")
	if code != ExitOK || !strings.Contains(errs, "no type in them implements node.Handler") {
		t.Fatalf("vet of a package without a handler: exit %d, stderr:\n%s", code, errs)
	}
}

func TestVetFindings(t *testing.T) {
	code, out, errs := runVetCLI(t, "./testdata/vet/bad")
	if code != ExitViolations {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{
		"testdata/vet/bad/bad.go:13:", "rand.Intn draws from the process-wide generator", "use env.Rand()",
		"testdata/vet/bad/bad.go:16:", "the order of env.Send calls", "slices.Sorted(maps.Keys(m))",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, "replay vet: 2 findings (1 package checked)") {
		t.Errorf("stderr: %q", errs)
	}

	code, out, _ = runVetCLI(t, "--json", "./testdata/vet/bad")
	var rep vetReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != ExitViolations {
		t.Fatalf("exit %d, --json: %v\n%s", code, err, out)
	}
	var cats []string
	for _, f := range rep.Findings {
		cats = append(cats, f.Category)
	}
	if got := strings.Join(cats, ","); got != "rand,maporder" || rep.Findings[0].Line != 13 {
		t.Errorf("categories %s, findings %+v", got, rep.Findings)
	}
}

func TestVetBadInput(t *testing.T) {
	code, out, errs := runVetCLI(t, "./testdata/vet/broken")
	if code != ExitBadInput || out != "" {
		t.Fatalf("broken package: exit %d, want 2; stdout %q", code, out)
	}
	// The compiler's error, then the verb's one line.
	if !strings.Contains(errs, "broken.go:4:23: undefined: undefinedName") || !strings.Contains(errs, "replay vet: 1 error loading the packages") {
		t.Errorf("stderr:\n%s", errs)
	}
	code, _, errs = runVetCLI(t, "./testdata/vet/nosuchdir")
	if code != ExitBadInput {
		t.Errorf("missing directory: exit %d, want 2 (%s)", code, errs)
	}
	// Packages of another module: not code that fails to build, but a
	// pattern to give from inside that module (a new user's vet said
	// "vet checks only code that builds").
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "go.mod"), []byte("module example.com/other\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "o.go"), []byte("package o\n\nfunc F() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = runVetCLI(t, other+"/...")
	if code != ExitBadInput || !strings.Contains(errs, "run it from inside their module") || strings.Contains(errs, "only code that builds") {
		t.Errorf("another module: exit %d, stderr:\n%s", code, errs)
	}
	code, _, errs = runVetCLI(t, "--no-such-flag")
	if code != ExitBadInput {
		t.Errorf("bad flag: exit %d, want 2 (%s)", code, errs)
	}
	// Outside any module: go list's words came wrapped ("err: exit
	// status 1: stderr: go: go.mod file not found ...").
	nomod := t.TempDir()
	if err := os.WriteFile(filepath.Join(nomod, "x.go"), []byte("package x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(nomod)
	code, _, errs = runVetCLI(t, ".")
	if code != ExitBadInput || !strings.Contains(errs, "no Go module here") || strings.Contains(errs, "exit status") {
		t.Errorf("outside a module: exit %d, stderr:\n%s", code, errs)
	}
}

// TestVetVettool builds cmd/replay-vet and runs it under go vet -vettool,
// the other way in: the same findings, and the examples clean.
func TestVetVettool(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary and runs go vet")
	}
	tool := filepath.Join(t.TempDir(), "replay-vet")
	build := exec.Command("go", "build", "-o", tool, "github.com/replaycheck/replaycheck/cmd/replay-vet")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build replay-vet: %v\n%s", err, out)
	}
	vet := func(pkg string) (string, error) {
		cmd := exec.Command("go", "vet", "-vettool="+tool, pkg)
		cmd.Env = append(os.Environ(), "GOFLAGS=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := vet("./testdata/vet/bad")
	if err == nil || !strings.Contains(out, "bad.go:16:2: map iteration order is random") || !strings.Contains(out, "bad.go:13:") {
		t.Errorf("go vet on bad: err %v\n%s", err, out)
	}
	if out, err := vet("github.com/replaycheck/replaycheck/examples/..."); err != nil {
		t.Errorf("go vet on the examples: %v\n%s", err, out)
	}
}
