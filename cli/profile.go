package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
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

// profileFile is a profile's file, written through a stickyWriter: the
// profilers write in the background and drop their errors (a full disk
// left an empty profile and exit 0).
type profileFile struct {
	*os.File
	w stickyWriter
}

func (p *profileFile) Write(b []byte) (int, error) { return p.w.Write(b) }

// start starts the profiles asked for. args are the command's other
// arguments and flag values: a profile that names an output would be lost
// under it, and one that names an input file would empty it. A word that
// names no file (a system: sim paxos --cpuprofile paxos) is not an input
// to keep, as for outputsAreNotInputs.
func (p *profile) start(args []commandArg) error {
	if p.path != "" && p.starlarkPath != "" && sameFile(p.path, p.starlarkPath) {
		return badInput("--cpuprofile and --starlark-profile both name %s: give each its own file", p.path)
	}
	for _, flag := range []struct{ name, path string }{{"--cpuprofile", p.path}, {"--starlark-profile", p.starlarkPath}} {
		for _, a := range args {
			if flag.path != "" && (a.output || exists(a.value)) && sameFile(flag.path, a.value) {
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
	if err := notOverInput(path, "the "+flag+" profile"); err != nil {
		return nil, err
	}
	file, err := os.Create(path)
	if err != nil {
		return nil, badInput("%s: %v", flag, err)
	}
	f := &profileFile{File: file, w: stickyWriter{w: file}}
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
		err = f.w.err
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

// outputFlags name the flags whose value is a file the command writes.
// A flag annotated outputPrefix names a prefix of files instead
// (predict's -o), which no argument can be.
var outputFlags = []string{"output", "results"}

const outputPrefix = "replay-output-prefix"

// argumentIsASystem annotates a command whose positional argument names a
// system, not a file: a file of that name (sim paxos -o paxos, run twice)
// is no input of it.
const argumentIsASystem = "replay-argument-is-a-system"

// commandArg is one argument of a command line: a positional argument or
// the value of a flag (one element of a list flag).
type commandArg struct {
	name, value string // name: "argument 2", "--check", "-o"
	output      bool   // the value is a file the command writes
}

// commandArgs lists a command's positional arguments and the values of
// the flags it was given, but the profiles'.
func commandArgs(cmd *cobra.Command, args []string) []commandArg {
	var out []commandArg
	for i, a := range args {
		if cmd.Annotations[argumentIsASystem] == "" {
			out = append(out, commandArg{name: fmt.Sprintf("argument %d", i+1), value: a})
		}
	}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if f.Name == "cpuprofile" || f.Name == "starlark-profile" {
			return
		}
		name := "--" + f.Name
		if f.Shorthand != "" {
			name = "-" + f.Shorthand
		}
		output := slices.Contains(outputFlags, f.Name) && f.Annotations[outputPrefix] == nil
		values := []string{f.Value.String()}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			values = sv.GetSlice()
		}
		for _, v := range values {
			if v != "" && v != "-" {
				out = append(out, commandArg{name: name, value: v, output: output})
			}
		}
	})
	return out
}

// outputsAreNotInputs refuses an output the user named (-o, --results)
// that is also an input of the command (an argument or flag value naming
// an existing file: the script, the trace, a schedule) or its other
// output: writing it would replace the other.
func outputsAreNotInputs(cmd *cobra.Command, args []string) error {
	all := commandArgs(cmd, args)
	for i, out := range all {
		if !out.output {
			continue
		}
		for j, other := range all {
			if i == j || !other.output && !exists(other.value) || other.output && j > i {
				continue // not a file that is there to lose; each pair of outputs once
			}
			if sameFile(out.value, other.value) {
				what := "input"
				if other.output {
					what = "output"
				}
				return badInput("%s %s is also an %s of the command (%s %s): give each its own file (writing one would replace the other)", out.name, out.value, what, other.name, other.value)
			}
		}
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
