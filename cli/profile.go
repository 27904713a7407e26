package cli

import (
	"errors"
	"fmt"
	"os"
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
	if p.path != "" {
		f, err := os.Create(p.path)
		if err != nil {
			return badInput("--cpuprofile: %v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return badInput("--cpuprofile %s: %v", p.path, err)
		}
		p.f = f
	}
	if p.starlarkPath != "" {
		f, err := os.Create(p.starlarkPath)
		if err != nil {
			return badInput("--starlark-profile: %v", err)
		}
		if err := starlark.StartProfile(f); err != nil {
			f.Close()
			return badInput("--starlark-profile %s: %v", p.starlarkPath, err)
		}
		p.sf = f
	}
	return nil
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
