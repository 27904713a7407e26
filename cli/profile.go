package cli

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// profile is the --cpuprofile flag: a user who finds a verb slow on their
// own system can hand the profile to go tool pprof without building
// anything.
type profile struct {
	path string
	f    *os.File
}

func (p *profile) start() error {
	if p.path == "" {
		return nil
	}
	f, err := os.Create(p.path)
	if err != nil {
		return badInput("--cpuprofile: %v", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return badInput("--cpuprofile %s: %v", p.path, err)
	}
	p.f = f
	return nil
}

func (p *profile) stop() error {
	if p.f == nil {
		return nil
	}
	pprof.StopCPUProfile()
	if err := p.f.Close(); err != nil {
		return fmt.Errorf("--cpuprofile %s: %w", p.path, err)
	}
	return nil
}
