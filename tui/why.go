package tui

import (
	"fmt"

	"github.com/replaycheck/replaycheck/provenance"
	"github.com/replaycheck/replaycheck/replay"
)

// Why explains the selected State field's value at the cursor, as replay
// why does, from the database: a list whose lines that name a step go
// there on Enter.
func (m *Model) Why() {
	path := m.stateSel
	leaf := false
	for _, r := range m.stateRows() {
		if r.key == path {
			leaf = r.leaf
		}
	}
	if m.focus != PanelState || !leaf {
		m.say("y explains the value of the field selected in the State panel: Tab there and select a field (/ finds one)")
		return
	}
	// Message contents are in the trace, not the database: load it once
	// (the watches' replay shares it).
	tr := m.cfg.Trace
	if tr == nil {
		var err error
		if tr, err = replay.Load(m.cfg.Traces...); err != nil {
			m.fail("load the trace: %v", err)
			return
		}
		m.cfg.Trace = tr
	}
	opts := provenance.Options{Trace: tr, States: provenance.FromDB(m.db)}
	if sys, err := m.cfg.Registry.Lookup(tr.Header.System); err == nil {
		opts.Codec = sys.Codec
	}
	chain, err := provenance.Why(opts, m.node, path, m.pos)
	if err != nil {
		m.fail("%v", err)
		return
	}
	text, steps := chain.Lines()
	p := &popup{title: fmt.Sprintf("why %s %s at #%d (Enter: go to the step; links marked inferred are matched by value)", m.node, path, m.pos)}
	p.sel = -1
	for i, t := range text {
		st := StyleNormal
		if steps[i] < 0 {
			st = StyleDim
		} else if p.sel < 0 {
			p.sel = i
		}
		p.items = append(p.items, popupItem{text: t, step: steps[i], style: st})
	}
	p.sel = max(p.sel, 0)
	p.onEnter = func(it popupItem) {
		if it.step < 0 {
			m.say("this line is not a step: ↑↓ to a line with #STEP")
			return
		}
		m.popup = nil
		m.seekOrSay(it.step)
	}
	m.popup = p
}
