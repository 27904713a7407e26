package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.starlark.net/starlark"
)

// profile is the --cpuprofile and --starlark-profile flags: a user who
// finds a verb slow on their own system can hand the profile to go tool
// pprof without building anything. The Go profile shows where the tool
// spends its time; the Starlark one which predicate, derived value or
// helper of the user's own script does.
type profile struct {
	path, starlarkPath string
	f, sf              *profileFile
}

// profileFile is a profile's file and the first error writing it: the
// profilers write in the background and drop their errors (a full disk
// left an empty profile and exit 0).
type profileFile struct {
	*os.File
	err error
}

func (p *profileFile) Write(b []byte) (int, error) {
	n, err := p.File.Write(b)
	if err != nil && p.err == nil {
		p.err = err
	}
	return n, err
}

// start starts the profiles asked for. uses are the command's other
// arguments and flag values: a profile that names one of them would
// empty an input (the trace, the script) or be lost under an output.
func (p *profile) start(uses []string) error {
	if p.path != "" && samePath(p.path, p.starlarkPath) {
		return badInput("--cpuprofile and --starlark-profile both name %s: give each its own file", p.path)
	}
	for _, flag := range []struct{ name, path string }{{"--cpuprofile", p.path}, {"--starlark-profile", p.starlarkPath}} {
		for _, u := range uses {
			if flag.path != "" && samePath(flag.path, u) {
				return badInput("%s %s is also an argument of the command (an input or output): give the profile its own file", flag.name, flag.path)
			}
		}
	}
	var err error
	if p.f, err = startProfile("--cpuprofile", p.path, pprof.StartCPUProfile); err != nil {
		return err
	}
	if p.sf, err = startProfile("--starlark-profile", p.starlarkPath, starlark.StartProfile); err != nil {
		if p.f != nil {
			pprof.StopCPUProfile()
			p.f.Close()
			p.f = nil
		}
		return err
	}
	return nil
}

// startProfile creates path and starts a profiler writing to it (nothing
// for an empty path).
func startProfile(flag, path string, start func(io.Writer) error) (*profileFile, error) {
	if path == "" {
		return nil, nil
	}
	file, err := os.Create(path)
	if err != nil {
		return nil, badInput("%s: %v", flag, err)
	}
	f := &profileFile{File: file}
	if err := start(f); err != nil {
		f.Close()
		return nil, badInput("%s %s: %v", flag, path, err)
	}
	return f, nil
}

func (p *profile) stop() error {
	var errs []error
	if p.f != nil {
		pprof.StopCPUProfile()
		errs = append(errs, closeProfile("--cpuprofile", p.path, p.f, nil))
		p.f = nil
	}
	if p.sf != nil {
		errs = append(errs, closeProfile("--starlark-profile", p.starlarkPath, p.sf, starlark.StopProfile()))
		p.sf = nil
	}
	return errors.Join(errs...)
}

// closeProfile closes a profile's file once its profiler stopped (with
// err), and says if the command's own output took its name meanwhile
// (an output whose default name the user did not give, so start could
// not see it): the profile was written to a file no name reaches.
func closeProfile(flag, path string, f *profileFile, err error) error {
	opened, serr := f.Stat()
	if err == nil {
		err = f.err
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", flag, path, err)
	}
	if now, err := os.Stat(path); serr == nil && (err != nil || !os.SameFile(opened, now)) {
		return fmt.Errorf("%s %s: the profile was lost, the command's output was written over it: give the profile its own file", flag, path)
	}
	return nil
}

// samePath says whether a and b name one file: the same path, or, when
// both exist, the same file by another name (a link, ./x and x).
func samePath(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// outputFlags name the flags whose value is a file the command writes.
var outputFlags = []string{"output", "results"}

// outputsAreNotInputs refuses an output the user named (-o, --results)
// that is also another argument or flag value of the command: writing it
// would replace an input (the script, the trace, a schedule) or the other
// output.
func outputsAreNotInputs(cmd *cobra.Command, args []string) error {
	var outs []*pflag.Flag
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if slices.Contains(outputFlags, f.Name) && f.Value.String() != "" && f.Value.String() != "-" {
			outs = append(outs, f)
		}
	})
	for i, out := range outs {
		others := commandUses(cmd, args, out.Name)
		for _, o := range outs[:i] {
			others = append(others, o.Value.String())
		}
		for _, u := range others {
			if samePath(out.Value.String(), u) {
				name := "--" + out.Name
				if out.Shorthand != "" {
					name = "-" + out.Shorthand
				}
				return badInput("%s %s is also an input or output of the command: give it its own file (writing it would replace the other)", name, out.Value.String())
			}
		}
	}
	return nil
}

// commandUses lists a command's positional arguments and the values of
// the flags it was given (each element of a list flag), but the profiles'
// and those of the flags named in except.
func commandUses(cmd *cobra.Command, args []string, except ...string) []string {
	uses := slices.Clone(args)
	cmd.Flags().Visit(func(f *pflag.Flag) {
		switch {
		case f.Name == "cpuprofile" || f.Name == "starlark-profile" || slices.Contains(except, f.Name):
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			uses = append(uses, sv.GetSlice()...)
			return
		}
		uses = append(uses, f.Value.String())
	})
	return uses
}
