package cli

import (
	"cmp"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/replaycheck/replaycheck/internal/shellword"

	"golang.org/x/mod/modfile"
)

// programCommand is how the commands this program prints should invoke
// it, given the name it was started by (os.Args[0]): that name without
// its folder ("replay", or a team's own binary built with cli.Main), or,
// for a binary that go run built in a temporary directory (not on the
// PATH), the go run command that builds it again: "go run ./cmd/replay"
// from the root of its module, else with its import path.
func programCommand(arg0 string) string {
	exe, _ := os.Executable()
	bi, _ := debug.ReadBuildInfo()
	gomod, _ := os.ReadFile("go.mod")
	return programCommandFor(arg0, exe, bi, gomod)
}

// programCommandFor is programCommand for the name the program was
// started by, the executable's path, its build information (nil: none)
// and the current directory's go.mod (nil: none).
func programCommandFor(arg0, exe string, bi *debug.BuildInfo, gomod []byte) string {
	if bi != nil && bi.Path != "" && strings.Contains(filepath.ToSlash(exe), "/go-build") {
		if rel, under := strings.CutPrefix(bi.Path, bi.Main.Path+"/"); under && bi.Main.Path != "" && modfile.ModulePath(gomod) == bi.Main.Path {
			return "go run ./" + rel
		}
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			return "go run " + bi.Path + "@" + v // run outside a module: go run PATH@VERSION
		}
		return "go run " + bi.Path
	}
	name := strings.TrimSuffix(arg0[strings.LastIndexAny(arg0, `/\`)+1:], ".exe")
	// A name a shell would read as more than a bare word (or as a flag)
	// is not printed into commands.
	if name == "" || name == "." || strings.HasPrefix(name, "-") || shellword.Quote(name) != name {
		return "replay"
	}
	return name
}

// prog is the command that runs this program, for printed commands.
func (a *App) prog() string {
	if a.Program == "" {
		return "replay"
	}
	return a.Program
}

// prog is f.program, "replay" when unset.
func (f simFlags) prog() string {
	return cmp.Or(f.program, "replay")
}

// name is the program's name in messages ("replay check: ..."): the last
// word of prog without its folder or version.
func (a *App) name() string {
	words := strings.Fields(a.prog())
	if len(words) == 0 {
		return "replay"
	}
	name, _, _ := strings.Cut(filepath.Base(words[len(words)-1]), "@")
	return name
}

// withProgram is a command line that starts "replay " (simtest.SimCommand
// writes them so) with prog in its place.
func withProgram(prog, line string) string {
	if rest, ok := strings.CutPrefix(line, "replay "); ok {
		return prog + " " + rest
	}
	return line
}
