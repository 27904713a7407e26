package statedb

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/fxamacker/cbor/v2"
	"go.starlark.net/starlark"

	"github.com/replaycheck/replaycheck/internal/regular"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/stall"
	"github.com/replaycheck/replaycheck/system"
)

// Predicates is what checking a predicates script over the trace found.
type Predicates struct {
	Script     string      `json:"script"`
	Hash       string      `json:"hash"` // ScriptHash when checked
	Declared   []Declared  `json:"predicates"`
	Violations []Violation `json:"violations"`
	Errors     []string    `json:"errors,omitempty"`
	Steps      int         `json:"steps"`
	Seconds    float64     `json:"seconds"`
	// Lossy: the trace lacks part of the run (a damaged file, a node no
	// file records, a recording that stopped early), so only what was
	// recorded and recovered was checked (replay.Trace.Lossy).
	Lossy bool `json:"lossy,omitempty"`
}

// Declared is one predicate of the script.
type Declared struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
}

// Violation is a predicates.Violation, kept as text.
type Violation struct {
	Predicate string  `json:"predicate"`
	Kind      string  `json:"kind"`
	Step      int     `json:"step"`
	EndStep   int     `json:"end_step"` // liveness: the step it held again (-1: open at the end)
	Alarm     bool    `json:"alarm"`
	AlarmStep int     `json:"alarm_step,omitempty"`
	Node      node.ID `json:"node"`
	Lamport   uint64  `json:"lamport"`
	Time      int64   `json:"time"`
	Event     string  `json:"event"`
	Witness   string  `json:"witness,omitempty"`
	// AlarmWitness: a liveness interval's witness when it was raised.
	AlarmWitness string `json:"alarm_witness,omitempty"`
	Aux          string `json:"aux,omitempty"`
	// Unjudged: a liveness interval open where checking stopped, or that
	// nothing judged after its predicate or alarm function failed.
	Unjudged bool `json:"unjudged,omitempty"`
}

// Finding reports whether the violation counts as replay check counts it
// by default (predicates.Violation.Finding): a safety violation, or a
// liveness interval that became an alarm; not a screened interval.
func (v Violation) Finding() bool { return v.Kind == "safety" || v.Alarm }

// Flip is a step after which a predicate's value differs from its value
// before the step (predicates hold before the first step).
type Flip struct {
	Step      int    `cbor:"3,keyasint"`
	Predicate string `cbor:"1,keyasint"`
	Holds     bool   `cbor:"2,keyasint"`
}

// Outdated says why the stored results may not be the script's now
// ("" when they are): it changed since (or a script beside it that it
// may load did), or it cannot be read any more. Results shown without
// --preds are the stored ones; this says when they are stale.
func (p *Predicates) Outdated() string {
	h, err := ScriptHash(p.Script)
	switch {
	case err != nil:
		return "its script cannot be read now"
	case h != p.Hash:
		return "its script changed since they were checked"
	}
	return ""
}

// ScriptHash identifies a predicates script as it is now: its content and
// that of every .star file beside it (which it may load()).
func ScriptHash(script string) (string, error) {
	h := xxhash.New()
	// The version of what results hold: results stored by an older
	// release are checked again (2: alarm witnesses; 3: an incomplete
	// trace's open intervals and those a failed alarm left are unjudged,
	// a failed derived value fails its readers; 4: its readers read it
	// again, a failed predicate's interval is unjudged and stored so,
	// prev() needs keep=2, derived values read in declaration order,
	// gaps in the middle make a trace incomplete).
	io.WriteString(h, "results 4\x00")
	// The same refusals as loading: a symlink to /dev/zero must not hang
	// hashing before the loader gets to say no.
	main, err := predicates.ReadScript(script)
	if err != nil {
		return "", fmt.Errorf("read predicates: %w", err)
	}
	h.Write(main)
	others, _ := filepath.Glob(filepath.Join(filepath.Dir(script), "*.star"))
	slices.Sort(others)
	for _, p := range others {
		if filepath.Base(p) == filepath.Base(script) {
			continue
		}
		src, err := predicates.ReadScript(p)
		if err != nil {
			continue // not loadable, so it cannot change the results
		}
		io.WriteString(h, "\x00"+filepath.Base(p)+"\x00")
		h.Write(src)
	}
	return fmt.Sprintf("%016x", h.Sum64()), nil
}

// predCollector observes a checker step by step and records where each
// predicate flips.
type predCollector struct {
	c     *predicates.Checker
	holds map[string]bool
	flips []Flip
	// seen counts the checker's violations looked at, open its liveness
	// intervals not yet raised or closed; soFar (under mu) the findings
	// made so far, which a debugger reads while the index is built.
	seen int
	open []*predicates.Violation
	// raised are the alarms in soFar (at) whose interval is open still:
	// their end is filled in when it closes.
	raised []raisedAlarm
	mu     sync.Mutex
	soFar  []Violation
}

type raisedAlarm struct {
	v  *predicates.Violation
	at int
}

func newPredCollector(c *predicates.Checker) *predCollector {
	pc := &predCollector{c: c, holds: map[string]bool{}}
	for _, p := range c.Predicates() {
		pc.holds[p.Name] = true
	}
	return pc
}

func (pc *predCollector) observe(step int) error {
	if err := pc.c.Observe(); err != nil {
		return err
	}
	pc.noteFindings()
	now := pc.c.Holds()
	for _, p := range pc.c.Predicates() {
		if v, ok := now[p.Name]; ok && v != pc.holds[p.Name] {
			pc.flips = append(pc.flips, Flip{Step: step, Predicate: p.Name, Holds: v})
			pc.holds[p.Name] = v
		}
	}
	return nil
}

// noteFindings adds to soFar the safety violations and raised alarms
// the last step recorded, and the end of a raised alarm's interval that
// it closed.
func (pc *predCollector) noteFindings() {
	all := pc.c.Found()
	var found []*predicates.Violation
	for ; pc.seen < len(all); pc.seen++ {
		if v := all[pc.seen]; v.Kind == "safety" {
			found = append(found, v)
		} else {
			pc.open = append(pc.open, v)
		}
	}
	kept := pc.open[:0]
	for _, v := range pc.open {
		switch {
		case v.Alarm:
			found = append(found, v)
		case v.EndStep < 0:
			kept = append(kept, v)
		}
	}
	clear(pc.open[len(kept):])
	pc.open = kept
	var closed []raisedAlarm
	stillOpen := pc.raised[:0]
	for _, r := range pc.raised {
		if r.v.EndStep >= 0 {
			closed = append(closed, r)
		} else {
			stillOpen = append(stillOpen, r)
		}
	}
	clear(pc.raised[len(stillOpen):])
	pc.raised = stillOpen
	if len(found) == 0 && len(closed) == 0 {
		return
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	for _, r := range closed {
		pc.soFar[r.at].EndStep = r.v.EndStep
	}
	for _, v := range found {
		if v.Kind == "liveness" && v.EndStep < 0 {
			pc.raised = append(pc.raised, raisedAlarm{v, len(pc.soFar)})
		}
		pc.soFar = append(pc.soFar, violationOf(v))
	}
}

// found returns a copy of the findings made so far.
func (pc *predCollector) found() []Violation {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return slices.Clone(pc.soFar)
}

// violationOf is a checker's violation as results keep it.
func violationOf(v *predicates.Violation) Violation {
	out := Violation{Predicate: v.Predicate, Kind: v.Kind, Step: v.Step, EndStep: v.EndStep, Alarm: v.Alarm,
		AlarmStep: v.AlarmStep, Node: v.Node, Lamport: v.Lamport, Time: v.Time, Event: v.Describe(), Witness: v.Witness, AlarmWitness: v.AlarmWitness,
		Unjudged: v.Status() == "unjudged"}
	if v.Aux != nil && v.Aux != starlark.None {
		out.Aux = v.Aux.String()
	}
	return out
}

func (pc *predCollector) results(script string, elapsed time.Duration) (*Predicates, []Flip) {
	rep := pc.c.Finish()
	hash, _ := ScriptHash(script)
	p := &Predicates{Script: script, Hash: hash, Steps: rep.Steps, Seconds: elapsed.Seconds()}
	for _, d := range pc.c.Predicates() {
		p.Declared = append(p.Declared, Declared{Name: d.Name, Kind: d.Kind})
	}
	for _, v := range rep.Violations {
		p.Violations = append(p.Violations, violationOf(v))
	}
	for _, e := range rep.Errors {
		p.Errors = append(p.Errors, fmt.Sprintf("%s failed at step #%d and was disabled: %s", e.Name, e.Step, e.Message))
	}
	return p, pc.flips
}

// CheckPredicates replays tr, checking script after every step, and
// returns what it found with the steps where each predicate flips. State
// hashes are not compared (the database build did).
func CheckPredicates(tr *replay.Trace, reg *system.Registry, script string, progress func(string, int, int)) (*Predicates, []Flip, error) {
	return checkPredicates(tr, reg, script, progress, nil, nil)
}

// CheckPredicatesWatched is CheckPredicates whose handler calls, and the
// script's load and evaluations, take slots of watch, so that whoever
// runs watch (stall.Watch.Run) can give up on one stuck in a single
// step.
func CheckPredicatesWatched(tr *replay.Trace, reg *system.Registry, script string, progress func(string, int, int), watch *stall.Watch) (*Predicates, []Flip, error) {
	return checkPredicates(tr, reg, script, progress, nil, watch)
}

func checkPredicates(tr *replay.Trace, reg *system.Registry, script string, progress func(string, int, int), stop func() bool, watch *stall.Watch) (*Predicates, []Flip, error) {
	start := time.Now()
	r, err := replay.New(tr, reg, replay.Options{SkipStateHashes: true, Watch: watch})
	if err != nil {
		return nil, nil, err
	}
	c, err := predicates.Load(script, r, predicates.Options{To: -1, CutShort: tr.Incomplete(tr.Nodes)})
	if err != nil {
		return nil, nil, err
	}
	pc := newPredCollector(c)
	n := tr.Len()
	for step := range n {
		if err := r.Next(); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, nil, err
		}
		if err := pc.observe(step); err != nil {
			return nil, nil, err
		}
		if step%stopEvery == 0 && stop != nil && stop() {
			return nil, nil, ErrStopped
		}
		if (step%2048 == 0 || step == n-1) && progress != nil {
			progress("checking", step+1, n)
		}
	}
	p, flips := pc.results(script, time.Since(start))
	p.Lossy = tr.Lossy(tr.Nodes)
	return p, flips, nil
}

// Predicates returns the stored predicate results (nil: none).
func (db *DB) Predicates() *Predicates { return db.preds }

// predsFile holds the predicate results in the database's directory. They
// live beside the Badger store, not in it, so that the store is written
// only while it is built: readers open it read-only and share it, and a
// re-check replaces this one file (atomically, by rename), whoever else
// is reading.
const predsFile = "predicates.cbor"

// storedPredicates is the content of predsFile.
type storedPredicates struct {
	// Fingerprint is the database's: results written by a reader of a
	// database since rebuilt from another trace are not taken.
	Fingerprint string `cbor:"1,keyasint"`
	Info        []byte `cbor:"2,keyasint"` // Predicates as JSON
	Flips       []Flip `cbor:"3,keyasint"`
}

// maxPredsBytes bounds the stored predicate results read back.
const maxPredsBytes = 1 << 30

func (db *DB) loadPredicates() error {
	b, err := regular.ReadFile(filepath.Join(db.dir, predsFile), maxPredsBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the predicate results in %s: %w", db.dir, err)
	}
	var sp storedPredicates
	var p Predicates
	if cbor.Unmarshal(b, &sp) != nil || json.Unmarshal(sp.Info, &p) != nil || sp.Fingerprint != db.meta.Fingerprint {
		return nil // damaged or of another trace: as if never checked
	}
	db.preds, db.flips = &p, sp.Flips
	return nil
}

// SetPredicates replaces the stored predicate results. The results are
// kept in memory even if storing them fails.
func (db *DB) SetPredicates(p *Predicates, flips []Flip) error {
	flips = slices.Clone(flips)
	slices.SortStableFunc(flips, func(a, b Flip) int { return a.Step - b.Step })
	db.preds, db.flips = p, flips
	info, err := json.Marshal(p)
	if err != nil {
		return err
	}
	b, err := cbor.Marshal(storedPredicates{Fingerprint: db.meta.Fingerprint, Info: info, Flips: flips})
	if err != nil {
		return err
	}
	target := filepath.Join(db.dir, predsFile)
	f, err := CreatePartial(target)
	if err == nil {
		_, err = f.Write(b)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(f.Name(), target)
		}
		if err != nil {
			os.Remove(f.Name())
		}
	}
	if err != nil {
		return fmt.Errorf("store the predicate results in %s (they are kept for this session only): %w", db.dir, err)
	}
	return nil
}

// NextFlip finds the nearest step after pos (forward) or before pos
// (backward) where any predicate flips, with its flips.
func (db *DB) NextFlip(pos int, forward bool) (int, []Flip, bool, error) {
	fs := db.flips
	var i int
	if forward {
		i, _ = slices.BinarySearchFunc(fs, pos+1, func(f Flip, step int) int { return f.Step - step })
		if i >= len(fs) {
			return 0, nil, false, nil
		}
	} else {
		i, _ = slices.BinarySearchFunc(fs, pos, func(f Flip, step int) int { return f.Step - step })
		if i == 0 {
			return 0, nil, false, nil
		}
		i--
	}
	step := fs[i].Step
	lo, hi := i, i
	for lo > 0 && fs[lo-1].Step == step {
		lo--
	}
	for hi < len(fs) && fs[hi].Step == step {
		hi++
	}
	return step, slices.Clone(fs[lo:hi]), true, nil
}
