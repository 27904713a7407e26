package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/packages"

	"github.com/replaycheck/replaycheck/vet"
)

// vetFinding is one finding as `replay vet --json` prints it.
type vetFinding struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	Package  string `json:"package"`
	Category string `json:"category"`
	Message  string `json:"message"`
}

type vetReport struct {
	Packages int `json:"packages"`
	// Handlers counts the handler types found in the packages checked:
	// with none, nothing was walked.
	Handlers int          `json:"handlers"`
	Findings []vetFinding `json:"findings"`
}

func (a *App) vetCmd() *cobra.Command {
	var asJSON, tests bool
	cmd := &cobra.Command{
		Use:   "vet [PACKAGES...]",
		Short: "Find nondeterminism in node handlers before it shows up as a divergence",
		Long: `vet loads Go packages (default ./...) and reports, in the methods of every
type implementing node.Handler and in what they call within the module,
the code that would make replay diverge: goroutines, select, channel
operations, time.Now and real timers, the global math/rand, crypto/rand the
system does not route, file and network I/O, and ranges over maps whose
order decides a send, a timer or a kept slice. Each finding says why and
what to use instead (env.Now, env.Rand, env.After, sorted keys).

A //replay:ok comment on the finding's line, or on the line above, silences
it. The same analyzer runs under go vet: go vet -vettool=$(which replay-vet)
(built from ./cmd/replay-vet).

Exit codes: 0 clean, 1 findings, 2 a package does not build (the
compiler's errors are printed) or bad flags.`,
		Example: `  replay vet ./examples/...
  replay vet --json ./mysys | jq -r '.findings[].message'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = []string{"./..."}
			}
			rep, err := runVet(args, tests)
			if err != nil {
				var ee *vetBuildError
				if errors.As(err, &ee) {
					for _, e := range ee.errs {
						fmt.Fprintln(a.Stderr, e)
					}
				}
				return err
			}
			if asJSON {
				enc := json.NewEncoder(a.Stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else {
				for _, f := range rep.Findings {
					fmt.Fprintf(a.Stdout, "%s:%d:%d: %s\n", f.File, f.Line, f.Column, f.Message)
				}
			}
			if n := len(rep.Findings); n > 0 {
				return &exitError{ExitViolations, fmt.Errorf("%s (%s checked)", plural(n, "finding"), plural(rep.Packages, "package"))}
			}
			if !asJSON {
				// Silence would not say that anything was checked.
				fmt.Fprintf(a.Stderr, "%s vet: no findings (%s checked)\n", a.name(), plural(rep.Packages, "package"))
				if rep.Handlers == 0 {
					fmt.Fprintf(a.Stderr, "%[1]s vet: note: no type in them implements node.Handler, so nothing was walked (a handler in a file with build tags is seen only with them: GOFLAGS=-tags=TAG %[1]s vet ...; a generic handler type is not followed)\n", a.name())
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the findings as one JSON object")
	cmd.Flags().BoolVar(&tests, "tests", false, "also check the packages' test files")
	return cmd
}

// vetBuildError is a package that does not build: its errors are the
// compiler's, printed one per line before the verb's own line.
type vetBuildError struct{ errs []string }

func (e *vetBuildError) Error() string {
	for _, s := range e.errs {
		// (Not "no required module provides": go says that of an import
		// missing from go.mod too, a build error inside the module.)
		if strings.Contains(s, "does not contain main module") || strings.Contains(s, "outside main module") {
			// Not code that fails to build: patterns go cannot resolve from
			// here (a new user ran vet ./other/... from outside the module).
			return fmt.Sprintf("%s loading the packages (printed above): vet resolves packages as go build does, from the module of the current directory; run it from inside their module (cd there; vet ./...)", plural(len(e.errs), "error"))
		}
	}
	return fmt.Sprintf("%s loading the packages (printed above); vet checks only code that builds", plural(len(e.errs), "error"))
}

// mainModuleDirs are the folders of the main modules go commands run
// here build: the module of this folder, or every module of its
// workspace (nil when there is none, or go cannot say).
func mainModuleDirs() []string {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return nil
	}
	var dirs []string
	for _, d := range strings.Fields(string(out)) {
		dirs = append(dirs, filepath.Clean(d)+string(filepath.Separator))
	}
	return dirs
}

// under reports whether a file is in one of the folders dirs (each
// ending in a separator).
func under(file string, dirs []string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(file, d) {
			return true
		}
	}
	return false
}

// bodiesOnlyUnder parses as go/packages does, but drops the function
// bodies (and comments) of files outside dirs.
func bodiesOnlyUnder(dirs []string) func(*token.FileSet, string, []byte) (*ast.File, error) {
	return func(fset *token.FileSet, filename string, src []byte) (*ast.File, error) {
		if under(filename, dirs) {
			return parser.ParseFile(fset, filename, src, parser.AllErrors|parser.ParseComments)
		}
		f, err := parser.ParseFile(fset, filename, src, parser.AllErrors|parser.SkipObjectResolution)
		if f != nil {
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok {
					fd.Body = nil
				}
			}
		}
		return f, err
	}
}

// onlyTypeErrors reports whether p's errors are all type errors.
func onlyTypeErrors(p *packages.Package) bool {
	for _, e := range p.Errors {
		if e.Kind != packages.TypeError {
			return false
		}
	}
	return true
}

// inModules reports whether p's files are in one of the folders dirs.
func inModules(p *packages.Package, dirs []string) bool {
	for _, f := range p.GoFiles {
		if under(f, dirs) {
			return true
		}
	}
	return false
}

// runVet loads the packages with their dependencies from source (the
// analyzer's facts flow from a package to its importers, so checker.Analyze
// runs it on every dependency too) and collects the findings of the root
// packages, sorted and without the duplicates that test variants of a
// package produce.
func runVet(patterns []string, tests bool) (*vetReport, error) {
	cfg := &packages.Config{Mode: packages.LoadAllSyntax | packages.NeedModule, Tests: tests}
	// The analyzer follows only the module's own functions: other
	// modules' packages are needed for their types, not their bodies. A
	// main package calling cli.Main loaded the whole tool from source
	// (446 packages, 944 MB).
	moduleDirs := mainModuleDirs()
	if len(moduleDirs) > 0 {
		cfg.ParseFile = bodiesOnlyUnder(moduleDirs)
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		if strings.Contains(err.Error(), "go.mod file not found") {
			// go list's own words, wrapped: "err: exit status 1: stderr: go: ...".
			return nil, badInput("no Go module here: vet resolves packages as go build does, from the module of the current directory (its go.mod); run it from inside your module (cd there; vet ./...)")
		}
		return nil, badInput("%v", err)
	}
	if len(pkgs) == 0 {
		return nil, badInput("no packages match %s", strings.Join(patterns, " "))
	}
	var errs []string
	seenErr := map[string]bool{}
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		if len(moduleDirs) > 0 && !inModules(p, moduleDirs) && onlyTypeErrors(p) {
			// Imports only function bodies used, now unused: the types
			// are whole all the same, and the analyzer must run on the
			// package for its importers' sake.
			p.Errors, p.TypeErrors = nil, nil
		}
		// Ill-typed as go/packages says: its own errors or an import's
		// (visited first), now that those were let go.
		p.IllTyped = len(p.Errors) > 0
		for _, imp := range p.Imports {
			p.IllTyped = p.IllTyped || imp.IllTyped
		}
		for _, e := range p.Errors {
			if s := e.Error(); !seenErr[s] {
				seenErr[s] = true
				errs = append(errs, s)
			}
		}
	})
	if len(errs) > 0 {
		return nil, &exitError{ExitBadInput, &vetBuildError{errs}}
	}
	graph, err := checker.Analyze([]*analysis.Analyzer{vet.Analyzer}, pkgs, nil)
	if err != nil {
		return nil, err
	}
	wd, _ := os.Getwd()
	rep := &vetReport{Findings: []vetFinding{}}
	seen := map[vetFinding]bool{}
	roots := map[string]bool{}
	for _, act := range graph.Roots {
		if act.Err != nil {
			return nil, fmt.Errorf("%s: %v", act.Package.PkgPath, act.Err)
		}
		if !roots[act.Package.PkgPath] {
			if res, ok := act.Result.(*vet.Result); ok && res != nil {
				rep.Handlers += len(res.Handlers)
			}
		}
		roots[act.Package.PkgPath] = true
		for _, d := range act.Diagnostics {
			pos := act.Package.Fset.Position(d.Pos)
			file := pos.Filename
			if rel, err := filepath.Rel(wd, file); err == nil && !strings.HasPrefix(rel, "..") {
				file = rel
			}
			f := vetFinding{File: file, Line: pos.Line, Column: pos.Column, Package: act.Package.PkgPath, Category: d.Category, Message: d.Message}
			if !seen[f] {
				seen[f] = true
				rep.Findings = append(rep.Findings, f)
			}
		}
	}
	rep.Packages = len(roots)
	sort.Slice(rep.Findings, func(i, j int) bool {
		a, b := rep.Findings[i], rep.Findings[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	return rep, nil
}
