package cli

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/replaycheck/replaycheck/internal/atomicfile"
	"github.com/replaycheck/replaycheck/scripts"
)

// builtinPrefix names a script embedded in the binary: builtin:paxos.
const builtinPrefix = "builtin:"

// scriptHelp is how every verb that takes a predicates script describes
// the argument, so that the rule reads the same everywhere.
func (a *App) scriptHelp() string {
	usable, others := a.bundledFor()
	bundled := "Bundled: " + strings.Join(usable, ", ") + "."
	switch {
	case len(usable) == 0:
		bundled = "Bundled: " + strings.Join(others, ", ") + ", for replaycheck's example systems,\nwhich this binary does not register."
	case len(others) > 0:
		bundled += " Also bundled, for example systems this binary does not register:\n" + strings.Join(others, ", ") + "."
	}
	return `A predicates script is a file path, or a script bundled in the binary:
builtin:NAME or NAME.star (builtin:paxos, paxos.star). An existing file wins
over a bundled script of the same name, so a script of your own is never
shadowed; the bundled ones work from any directory (after go install).
` + bundled
}

// scriptSystem is the bundled system each bundled script checks
// (TestEveryBundledScriptHasItsSystem keeps it whole).
var scriptSystem = map[string]string{
	"chainrep": "chainrep", "chord": "chord", "lockserver": "lockserver", "paxos": "paxos",
	"raft": "raftkv", "raftkv-linearizable": "raftkv", "randtree": "randtree",
	"replicastore": "replicastore", "transport": "transport",
}

// knows says whether the binary registers the system called name.
func (a *App) knows(name string) bool {
	_, err := a.Registry.Lookup(name)
	return err == nil
}

// bundledNames are the embedded scripts' names without .star.
func bundledNames() []string {
	var out []string
	for _, n := range bundledScripts() {
		out = append(out, strings.TrimSuffix(n, ".star"))
	}
	return out
}

// scriptRef is a predicates script the user named, resolved.
type scriptRef struct {
	// Path is the file to load: the argument itself, or the copy of an
	// embedded script.
	Path string
	// Name is how printed commands name it: the argument, or
	// builtin:NAME for an embedded script, which means the same thing
	// from any directory (a bare paxos.star would not where a file of
	// that name exists).
	Name string
}

// isScriptArg says whether s may name a predicates script: the positional
// PREDS.star of check and the other verbs is recognised by this.
func isScriptArg(s string) bool {
	return strings.HasSuffix(s, ".star") || strings.HasPrefix(s, builtinPrefix)
}

// bundledScripts lists the embedded scripts' file names, sorted (fs.Glob
// returns them in directory order, which embed.FS keeps sorted).
func bundledScripts() []string {
	names, _ := fs.Glob(scripts.FS, "*.star")
	return names
}

// bundledList is the list an error about a script name shows.
func (a *App) bundledList() string {
	usable, _ := a.bundledFor()
	if len(usable) == 0 {
		return "none for the systems this binary registers"
	}
	for i, n := range usable {
		usable[i] = builtinPrefix + n
	}
	return strings.Join(usable, ", ")
}

// bundledFor splits the bundled scripts by whether the binary registers
// the example system each checks (all usable without a registry).
func (a *App) bundledFor() (usable, others []string) {
	for _, n := range bundledNames() {
		if a.Registry == nil || a.knows(scriptSystem[n]) {
			usable = append(usable, n)
		} else {
			others = append(others, n)
		}
	}
	return usable, others
}

// resolveScript is the one rule every verb applies to a predicates script
// argument: an existing file path wins (as given: the loader applies its
// own refusals to FIFOs, devices and symlinks out of the folder); otherwise
// builtin:NAME, or a bare NAME.star with no directory, is the script
// embedded in the binary, loaded from a copy of all the bundled scripts in
// one folder (builtinDir) so that its load() of a sibling resolves as it
// does in scripts/.
// Anything else is bad input whose message lists the bundled scripts.
func (a *App) resolveScript(arg string) (scriptRef, error) {
	if arg == "" {
		return scriptRef{}, badInput("empty predicates script name (a *.star file, or builtin:NAME: %s)", a.bundledList())
	}
	_, statErr := os.Lstat(arg)
	if statErr == nil {
		return scriptRef{Path: arg, Name: arg}, nil
	}
	name, builtin := strings.CutPrefix(arg, builtinPrefix)
	if !builtin && (!errors.Is(statErr, fs.ErrNotExist) || filepath.Base(arg) != arg) {
		// A path with a directory that does not exist is the user's own
		// file gone missing, not a request for a bundled script; say
		// which bundled script they may have meant.
		hint := ""
		if isBundled(filepath.Base(arg)) {
			hint = fmt.Sprintf("; the bundled script of that name is %s%s", builtinPrefix, strings.TrimSuffix(filepath.Base(arg), ".star"))
		}
		return scriptRef{}, badInput("%v%s (bundled scripts: %s)", statErr, hint, a.bundledList())
	}
	if !strings.HasSuffix(name, ".star") {
		if !builtin {
			// A bare word is not a script name: paxos is the system,
			// paxos.star or builtin:paxos its script.
			return scriptRef{}, badInput("%q is not a predicates script (a *.star file, or builtin:NAME: %s)", arg, a.bundledList())
		}
		name += ".star"
	}
	if !isBundled(name) {
		if builtin {
			return scriptRef{}, badInput("%s: no such bundled script (bundled: %s)", arg, a.bundledList())
		}
		return scriptRef{}, badInput("%v, and no bundled script is called %s (bundled: %s)", statErr, arg, a.bundledList())
	}
	if sys := scriptSystem[strings.TrimSuffix(name, ".star")]; a.Registry != nil && !a.knows(sys) {
		// It would check another system's types: no row, and a
		// vacuous pass or a late error.
		return scriptRef{}, badInput("%s checks replaycheck's example system %s, which this binary does not register (bundled scripts: %s)", arg, sys, a.bundledList())
	}
	if a.builtins == nil {
		a.builtins = &builtinDir{} // an App used without Run: nothing removes the copy
	}
	dir, err := a.builtins.dir()
	if err != nil {
		return scriptRef{}, fmt.Errorf("copy the bundled scripts: %w", err)
	}
	return scriptRef{Path: filepath.Join(dir, name), Name: builtinPrefix + strings.TrimSuffix(name, ".star")}, nil
}

// resolveOptional is resolveScript for an optional flag: "" stays "".
func (a *App) resolveOptional(arg string) (scriptRef, error) {
	if arg == "" {
		return scriptRef{}, nil
	}
	return a.resolveScript(arg)
}

func isBundled(name string) bool {
	if strings.ContainsAny(name, `/\`) {
		return false
	}
	st, err := fs.Stat(scripts.FS, name)
	return err == nil && st.Mode().IsRegular()
}

// builtinDir is where the embedded scripts are copied for loading. A copy
// on disk, rather than the source in memory, because everything downstream
// takes a path: the predicates loader and its load() of siblings, the trace
// database's script hash, explore's and shrink's workers, and the
// debugger, which stores the script's path with its results and re-checks
// from it in later sessions. That last is why the copy is kept in the
// user's cache directory, named by a hash of the embedded scripts: the
// stored path stays valid across commands and always holds the scripts
// this binary embeds. Without a usable cache directory the copy is a
// temporary folder that Run removes when the command ends.
type builtinDir struct {
	mu   sync.Mutex
	path string
	temp bool // path is this command's own temporary copy
}

// current is the folder of the copies if this command made or found one.
func (b *builtinDir) current() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.path
}

func (b *builtinDir) dir() (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.path != "" {
		return b.path, nil
	}
	if base, err := os.UserCacheDir(); err == nil {
		dir := filepath.Join(base, "replaycheck", "scripts-"+bundleHash())
		if err := writeBundled(dir); err == nil {
			b.path = dir
			return dir, nil
		}
	}
	dir, err := os.MkdirTemp("", "replay-builtin-")
	if err != nil {
		return "", err
	}
	if err := writeBundled(dir); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	b.path, b.temp = dir, true
	return dir, nil
}

// bundleHash names the embedded scripts' content, so that binaries built
// from different scripts never share a copy.
func bundleHash() string {
	h := sha256.New()
	for _, n := range bundledScripts() {
		src, _ := scripts.FS.ReadFile(n)
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(src))
		h.Write(src)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// writeBundled makes dir hold every embedded script as a regular file
// with the embedded content, rewriting any that is missing or was edited.
// Each file is replaced by a rename, so a concurrent replay reads either
// the old file or the whole new one, and two writing at once write the
// same bytes.
func writeBundled(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, n := range bundledScripts() {
		want, err := scripts.FS.ReadFile(n)
		if err != nil {
			return err
		}
		p := filepath.Join(dir, n)
		if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
			if got, err := os.ReadFile(p); err == nil && bytes.Equal(got, want) {
				continue
			}
		}
		if err := atomicfile.Write(p, want, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// remove deletes this command's temporary copy, if it made one; the copy
// in the cache directory stays for the next command.
func (b *builtinDir) remove() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.temp {
		os.RemoveAll(b.path)
		b.path, b.temp = "", false
	}
}

// withScriptHelp puts scriptHelp into a verb's long help, before its exit
// codes when it lists them (they end every verb's help).
func (a *App) withScriptHelp(long string) string {
	if i := strings.LastIndex(long, "\n\nExit codes"); i >= 0 {
		return long[:i] + "\n\n" + a.scriptHelp() + long[i:]
	}
	return long + "\n\n" + a.scriptHelp()
}

// scriptArg is resolveScript for a value that must name a script, with the
// message for one that cannot (a trace file given where the script goes).
func (a *App) scriptArg(arg string) (scriptRef, error) {
	if !isScriptArg(arg) {
		return scriptRef{}, badInput("%q is not a predicates script (*.star or builtin:NAME)", arg)
	}
	return a.resolveScript(arg)
}
