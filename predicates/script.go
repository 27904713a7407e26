package predicates

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dustin/go-humanize"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/replaycheck/replaycheck/internal/regular"
	"github.com/replaycheck/replaycheck/record"
)

// MaxScriptBytes caps a predicates script and every module it loads.
const MaxScriptBytes = 4 << 20

// ReadScript reads a predicates script as Load would, with the same
// refusals: for tools that hash or show a script before loading it.
func ReadScript(path string) ([]byte, error) { return readScript(filepath.Dir(path), path) }

// readScript reads the script at path, which must be, once symlinks are
// resolved, a regular file of at most MaxScriptBytes inside dir (the
// script's folder): a symlink to /dev/zero, a FIFO or a file elsewhere is
// refused before it is opened.
func readScript(dir, path string) ([]byte, error) {
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		what := "not a regular file"
		if kind := regular.Kind(fi.Mode()); kind != "" {
			what += ": " + kind
		}
		if real != path {
			what += " (" + real + ")"
		}
		return nil, fmt.Errorf("%s is %s", path, what)
	}
	rel, err := filepath.Rel(realDir, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return nil, fmt.Errorf("%s resolves to %s, outside the script's folder %s", path, real, realDir)
	}
	if fi.Size() > MaxScriptBytes {
		return nil, fmt.Errorf("%s is %s, larger than the %s a script may be", path, humanize.IBytes(uint64(fi.Size())), humanize.IBytes(MaxScriptBytes))
	}
	f, err := os.Open(real)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, MaxScriptBytes+1))
	if err != nil {
		return nil, err
	}
	if len(src) > MaxScriptBytes {
		return nil, fmt.Errorf("%s grew larger than the %s a script may be while it was read", path, humanize.IBytes(MaxScriptBytes))
	}
	return src, nil
}

// exec parses a script, rewrites it to keep it within its budgets, and
// runs it on the checker's thread with the predeclared names.
func (c *Checker) exec(path string, src []byte) (starlark.StringDict, error) {
	if record.HasTraceMagic(src) {
		return nil, fmt.Errorf("%s is a trace, not a predicates script (a verb that checks takes the traces first and the script last)", path)
	}
	if err := noNUL(path, string(src)); err != nil {
		return nil, err
	}
	f, err := fileOptions.Parse(path, src, 0)
	if err != nil {
		return nil, withOpenBracket(err, src)
	}
	guardFile(f)
	// Only a script that names msgs can read the message window (the
	// name is the only way to it); segments skip it otherwise.
	c.usesMsgs = c.usesMsgs || bytes.Contains(src, []byte("msgs"))
	predeclared := c.builtins()
	prog, err := starlark.FileProgram(f, predeclared.Has)
	if err != nil {
		return nil, err
	}
	g, err := prog.Init(c.thread, predeclared)
	if err == nil {
		// Checked before the freeze, which these would overflow the Go
		// stack in (no recover survives it).
		if name := tooDeepGlobal(g); name != "" {
			return nil, fmt.Errorf("%s: global %s is nested more than %d levels deep: hashing or comparing it could overflow the checker's stack", path, name, maxGlobalDepth)
		}
		if name := selfFreezing(g); name != "" {
			return nil, fmt.Errorf("%s: global %s holds a function that holds itself (a closure that names itself, as a recursive inner function does), which Starlark cannot freeze: define the function at the top level of the script", path, name)
		}
	}
	g.Freeze()
	return g, err
}

// noNUL refuses source holding a NUL byte, naming where: Starlark's
// scanner takes it for the end of the file, so everything after it (the
// rest of a script's predicates) was dropped without a word.
func noNUL(name, src string) error {
	i := strings.IndexByte(src, 0)
	if i < 0 {
		return nil
	}
	line := 1 + strings.Count(src[:i], "\n")
	col := 1 + i - (strings.LastIndexByte(src[:i], '\n') + 1)
	return fmt.Errorf("%s:%d:%d: a NUL byte (is this a text file?): nothing after it would be read", name, line, col)
}

// ScriptModules lists the modules a predicates script loads, directly or
// through others, as load() finds them: the .star files beside it, each
// once, in the order a load of the script first reaches them. A file that
// does not parse, or a module that cannot be read, ends its branch of the
// list (loading the script reports it). Tools that fingerprint a check
// (a sweep's shards must run the same one) read them with ReadScript.
func ScriptModules(path string) []string {
	dir := filepath.Dir(path)
	seen := map[string]bool{}
	var out []string
	var walk func(p string)
	walk = func(p string) {
		src, err := readScript(dir, p)
		if err != nil {
			return
		}
		f, err := fileOptions.Parse(p, src, 0)
		if err != nil {
			return
		}
		for _, stmt := range f.Stmts {
			load, ok := stmt.(*syntax.LoadStmt)
			if !ok {
				continue
			}
			module, _ := load.Module.Value.(string)
			if module != filepath.Base(module) || strings.HasPrefix(module, ".") || !strings.HasSuffix(module, ".star") || seen[module] {
				continue
			}
			seen[module] = true
			m := filepath.Join(dir, module)
			out = append(out, m)
			walk(m)
		}
	}
	walk(path)
	return out
}
