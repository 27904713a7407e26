package cli

import (
	"fmt"
	"io"
	"time"
)

// progress draws one self-overwriting status line on a terminal and
// nothing elsewhere, so piped and logged output stays clean.
type progress struct {
	w    io.Writer
	on   bool
	last time.Time
	drew bool
}

func (a *App) progress() *progress { return &progress{w: a.Stderr, on: a.Terminal} }

func (p *progress) update(format string, args ...any) {
	if !p.on || time.Since(p.last) < 200*time.Millisecond {
		return
	}
	p.last = time.Now()
	p.drew = true
	fmt.Fprintf(p.w, "\r\033[K"+format, args...)
}

func (p *progress) done() {
	if p.drew {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
