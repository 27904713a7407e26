package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"

	"go.starlark.net/starlark"
)

// profile is the --cpuprofile and --starlark-profile flags: a user who
// finds a verb slow on their own system can hand the profile to go tool
// pprof without building anything. The Go profile shows where the tool
// spends its time; the Starlark one which predicate, derived value or
// helper of the user's own script does.
type profile struct {
	path, starlarkPath string
	f, sf              *os.File
}

func (p *profile) start() error {
	if p.path != "" && filepath.Clean(p.path) == filepath.Clean(p.starlarkPath) {
		return badInput("--cpuprofile and --starlark-profile both name %s: give each its own file", p.path)
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
func startProfile(flag, path string, start func(io.Writer) error) (*os.File, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, badInput("%s: %v", flag, err)
	}
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
		if err := p.f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("--cpuprofile %s: %w", p.path, err))
		}
		p.f = nil
	}
	if p.sf != nil {
		err := starlark.StopProfile()
		if cerr := p.sf.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("--starlark-profile %s: %w", p.starlarkPath, err))
		}
		p.sf = nil
	}
	return errors.Join(errs...)
}
