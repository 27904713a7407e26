package statedb

import (
	"cmp"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/dgraph-io/badger/v4"
	"github.com/fxamacker/cbor/v2"

	"github.com/replaycheck/replaycheck/internal/regular"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/stall"
	"github.com/replaycheck/replaycheck/state"
	"github.com/replaycheck/replaycheck/system"
)

// checkpointEvery is how many deltas of a node whose state has n leaves
// separate two checkpoints: SnapshotEvery, or for a big state enough
// that its checkpoints add about 64 leaves per delta. Every 64 deltas,
// a node holding a 70,000-leaf log wrote 1,100 leaves per step, and its
// 30-second live trace a 2.9 GB database; a read of its state now
// applies up to 1,100 deltas (of a few leaves each) to a checkpoint that
// costs 70,000 to decode.
func checkpointEvery(n int) int { return max(SnapshotEvery, n/checkpointShare) }

// checkpointShare is the leaves of a big state per delta between two
// of its checkpoints.
const checkpointShare = 64

// SnapshotEvery is how many deltas of a node separate two checkpoints of
// its whole state, for a state of up to 64*SnapshotEvery leaves (bigger
// ones: checkpointEvery): a state read applies at most SnapshotEvery-1
// deltas.
const SnapshotEvery = 64

// PathFor names the database of a set of trace files: FILE.db beside a
// single file; beside the first of several in their canonical order
// (replay.CanonicalOrder: the order given does not matter), FIRST+N.HASH.db,
// where N counts the other files and HASH identifies the set (so two sets
// starting with the same file do not share a database).
func PathFor(traces []string) string {
	if len(traces) == 1 {
		return traces[0] + ".db"
	}
	first := replay.CanonicalOrder(traces)[0]
	abs := make([]string, len(traces))
	for i, t := range traces {
		a, err := filepath.Abs(t)
		if err != nil {
			a = t
		}
		abs[i] = a
	}
	slices.Sort(abs)
	h := xxhash.Sum64String(strings.Join(abs, "\x00"))
	return fmt.Sprintf("%s+%d.%08x.db", first, len(traces)-1, uint32(h))
}

// target is the database folder of traces (dir, or PathFor(traces) when
// ""), the traces' fingerprint, and an error when the folder cannot be a
// database (replaceable): what Ensure, NeedsBuild and StartBuild start from.
func target(traces []string, dir string) (string, string, error) {
	if dir == "" {
		dir = PathFor(traces)
	}
	// A symbolic link names where the database lives: it is built there,
	// and the link stays (a rebuild swapped a folder in for the link).
	if fi, err := os.Lstat(dir); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		real, err := filepath.EvalSymlinks(dir)
		if err != nil {
			to, _ := os.Readlink(dir)
			why := err
			if inner := errors.Unwrap(err); inner != nil {
				why = inner // without the path, said already
			}
			return dir, "", fmt.Errorf("%s is a symbolic link to %s, which cannot be reached (%v): point it at a folder, or remove it", dir, to, why)
		}
		dir = real
	}
	fp, err := Fingerprint(traces)
	if err != nil {
		return dir, "", err
	}
	return dir, fp, replaceable(dir)
}

// Fingerprint identifies the content of a set of trace files (in any
// order) and the database schema: a database whose fingerprint differs is
// stale.
func Fingerprint(traces []string) (string, error) {
	sums := make([]string, 0, len(traces))
	for _, t := range traces {
		f, err := regular.Open(t)
		if err != nil {
			return "", err
		}
		h := xxhash.New()
		n, err := io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("read %s: %w", t, err)
		}
		sums = append(sums, fmt.Sprintf("%016x:%d", h.Sum64(), n))
	}
	slices.Sort(sums)
	return fmt.Sprintf("v%d/%s", Schema, strings.Join(sums, ",")), nil
}

// Options control building and opening a database.
type Options struct {
	// Registry knows the trace's system (required to build).
	Registry *system.Registry
	// Preds is a predicates script whose results the database should hold
	// ("" for none; a database keeps the results it has).
	Preds string
	// Force rebuilds the database even if it is up to date.
	Force bool
	// Progress is called during long phases ("indexing", "compacting",
	// "checking"), from a goroutine of the build while indexing.
	Progress func(phase string, done, total int)
	// Trace, if set, is the already loaded trace of the files.
	Trace *replay.Trace
	// Stop, if set, is polled during long phases; when it returns true the
	// work ends with ErrStopped and nothing is kept.
	Stop func() bool
	// PublishEvery is how often a build makes the steps it indexed
	// readable (see Building; 0: the PublishEvery constant). Progress
	// is called as often.
	PublishEvery time.Duration
	// Waiting, if set, is called once when another process is building
	// the same database and this one waits for it to finish, with that
	// process's pid (0: unknown).
	Waiting func(pid int)
	// PartBytes is how many bytes of keys and values a part of the
	// database holds before the build starts the next (0: the PartBytes
	// constant); see parts.go.
	PartBytes int
	// Watch, if set, watches the build's handler calls (replay.Options).
	Watch *stall.Watch
}

// ErrStopped ends a build or a check that Options.Stop stopped.
var ErrStopped = errors.New("stopped before the end: nothing was kept")

// Opened says what Ensure did.
type Opened struct {
	Built   bool          // the database was (re)built
	Checked bool          // the predicates were (re)checked
	Trace   *replay.Trace // the loaded trace, if it had to be loaded
	Elapsed time.Duration
	// Why is why it was built: "new", "forced", "the trace changed",
	// "damaged: ...", "incomplete", "made by another release".
	Why string
	// Warning is something the caller should tell (results that could not
	// be stored).
	Warning string
}

// Ensure opens the database of traces at dir (PathFor(traces) when dir is
// ""), building it when it is missing, incomplete, damaged or stale, and
// checking opts.Preds when the database lacks results for that script as
// it is now. One process at a time builds a database (the others wait for
// it, see Options.Waiting); any number read it.
func Ensure(traces []string, dir string, opts Options) (*DB, *Opened, error) {
	start := time.Now()
	dir, fp, err := target(traces, dir)
	if err != nil {
		return nil, nil, err
	}
	res := &Opened{Trace: opts.Trace, Why: "forced"}
	RemoveStale(dir, staleAge) // databases swapped out that no one reads any more
	var db *DB
	if !opts.Force {
		if db, res.Why, err = openCurrent(dir, fp); err != nil {
			return nil, nil, err
		}
	}
	if db == nil {
		unlock, waited, err := lockBuild(dir, opts.Waiting, opts.Stop)
		if err != nil {
			return nil, nil, err
		}
		if waited && !opts.Force {
			// The build we waited for may have made what we need.
			if db, res.Why, err = openCurrent(dir, fp); err != nil {
				unlock()
				return nil, nil, err
			}
		}
		if db == nil {
			if res.Trace == nil {
				res.Trace, err = replay.Load(traces...)
			}
			if err == nil {
				db, err = build(dir, res.Trace, fp, opts)
			}
			res.Built, res.Checked = err == nil, err == nil && opts.Preds != ""
		}
		unlock()
		if err != nil {
			return nil, nil, err
		}
	}
	if opts.Preds != "" {
		hash, err := ScriptHash(opts.Preds)
		if err != nil {
			db.Close()
			return nil, nil, err
		}
		if p := db.Predicates(); p == nil || p.Hash != hash {
			if res.Trace == nil {
				if res.Trace, err = replay.Load(traces...); err != nil {
					db.Close()
					return nil, nil, err
				}
			}
			p, flips, err := checkPredicates(res.Trace, opts.Registry, opts.Preds, opts.Progress, opts.Stop, opts.Watch)
			if err != nil {
				db.Close()
				return nil, nil, err
			}
			// Results that cannot be stored (a database on read-only
			// media) still serve this session.
			if err := db.SetPredicates(p, flips); err != nil {
				res.Warning = err.Error()
			}
			res.Checked = true
		}
	}
	res.Elapsed = time.Since(start)
	return db, res, nil
}

// openCurrent opens the database at dir if it is complete and indexes the
// traces of fingerprint fp. It returns nil and why not when it must be
// (re)built, and an error only when it cannot be opened nor replaced.
func openCurrent(dir, fp string) (*DB, string, error) {
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); err != nil {
		return nil, "new", nil
	}
	db, err := Open(dir)
	var damaged *DamagedError
	switch {
	case err == nil && db.meta.Fingerprint != fp:
		db.Close()
		return nil, "the trace changed", nil
	case err == nil:
		return db, "", nil
	case errors.Is(err, ErrIncomplete):
		return nil, "incomplete", nil
	case errors.Is(err, ErrOtherSchema):
		return nil, "made by another release", nil
	case errors.As(err, &damaged):
		return nil, "damaged: " + oneLine(damaged.Err.Error()), nil
	}
	return nil, "", err
}

func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// replaceable refuses a path that exists and is not a trace database, so
// that rebuilding never deletes anything else.
func replaceable(dir string) error {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return fmt.Errorf("%s is a file, not a trace database: move it away or name another with --db", dir)
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("trace database %s: %w", dir, err)
	}
	if len(entries) == 0 {
		return nil
	}
	notDB := func(why string) error {
		return fmt.Errorf("%s exists and is not a trace database (%s): move it away or name another with --db", dir, why)
	}
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); err != nil {
		return notDB("no MANIFEST")
	}
	// A MANIFEST alone is no proof (packaging trees have one): every
	// entry must be one a database holds, so that a folder of anything
	// else is never emptied.
	if name, ok := onlyDatabaseFiles(dir, entries, true); !ok {
		return notDB(fmt.Sprintf("it holds %s", name))
	}
	// Nor are Badger's files: another program's store has them too. A
	// trace database keeps its steps in parts (part-0000, ...); one
	// without (of an older layout, or not ours) is ours only if its store
	// holds a database's description.
	if !slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.IsDir() && partName.MatchString(e.Name()) }) {
		if why := foreignStore(dir); why != "" {
			return notDB(why)
		}
	}
	return nil
}

// foreignStore says why the Badger store at dir is not a trace
// database's ("" when it may be one): it opens and holds no description,
// or it does not open and bears none of a database's marks (a VERIFIED
// stamp, stored predicate results), so it may be another program's.
func foreignStore(dir string) string {
	bdb, err := badger.OpenManaged(readOptions(dir))
	if err != nil {
		return marked(dir, fmt.Sprintf("a Badger store that does not open (%v) and bears no trace database's marks", err))
	}
	defer bdb.Close()
	txn := bdb.NewTransactionAt(latest, false)
	defer txn.Discard()
	switch _, err := txn.Get([]byte{nsMeta}); {
	case err == nil:
		return ""
	case errors.Is(err, badger.ErrKeyNotFound):
		return "a Badger store with no trace database's description: another program's"
	default:
		return marked(dir, fmt.Sprintf("a Badger store whose description cannot be read (%v) and that bears no trace database's marks", err))
	}
}

// marked is "" when dir bears a trace database's marks (a VERIFIED
// stamp, stored predicate results): a damaged database of ours; else why.
func marked(dir, why string) string {
	for _, mark := range []string{verifiedName, predsFile} {
		if _, err := os.Stat(filepath.Join(dir, mark)); err == nil {
			return ""
		}
	}
	return why
}

var (
	// storeFile names the files of a Badger store, its VERIFIED stamp,
	// and the predicate results beside the catalog (with the partial and
	// old copies of their rewrites).
	storeFile = regexp.MustCompile(`^(\d+\.(vlog|sst|mem)|MANIFEST|MANIFEST-REWRITE|KEYREGISTRY|REWRITE-KEYREGISTRY|DISCARD|LOCK|` +
		verifiedName + `|` + verifiedName + `\.\d+\.tmp|` + regexp.QuoteMeta(predsFile) + `|\.` + regexp.QuoteMeta(predsFile) + `\.(partial|old)-\d+` +
		// What a file browser leaves in a folder it showed (macOS).
		`|\.DS_Store|\._.*)$`)
	partName = regexp.MustCompile(`^part-\d{4,}$`)
)

// onlyDatabaseFiles tells whether entries (of dir) are all files a trace
// database holds: a store's files, and at the top its parts' folders
// holding only theirs. name is the first that is not.
func onlyDatabaseFiles(dir string, entries []os.DirEntry, top bool) (name string, ok bool) {
	for _, e := range entries {
		switch {
		case e.Type().IsRegular() && storeFile.MatchString(e.Name()):
		case top && e.IsDir() && partName.MatchString(e.Name()):
			sub, err := os.ReadDir(filepath.Join(dir, e.Name()))
			if err != nil {
				return e.Name(), false
			}
			if n, ok := onlyDatabaseFiles(filepath.Join(dir, e.Name()), sub, false); !ok {
				return filepath.Join(e.Name(), n), false
			}
		default:
			return e.Name(), false
		}
	}
	return "", true
}

// Build indexes tr into a new database at dir, replacing whatever is there
// (waiting for another process building it, see Ensure). It replays the
// whole trace once (checking state hashes: a divergence fails the build
// with a *replay.Divergence) and, if opts.Preds is set, checks the
// predicates in the same pass.
func Build(dir string, tr *replay.Trace, fingerprint string, opts Options) (*DB, error) {
	unlock, _, err := lockBuild(dir, opts.Waiting, opts.Stop)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return build(dir, tr, fingerprint, opts)
}

// build is Build with the build lock held. The database is written in a
// temporary directory beside dir and swapped in only when complete; the
// database it replaces is moved aside and removed once no reader holds it
// (now, or by a later build). Leftovers of killed builds go first.
func build(dir string, tr *replay.Trace, fingerprint string, opts Options) (*DB, error) {
	bg, err := prepare(dir, tr, fingerprint, opts)
	if err != nil {
		return nil, err
	}
	if err := bg.Run(nil); err != nil {
		bg.abandon()
		return nil, err
	}
	return bg.finish()
}

// prepare creates the database's temporary directory and store, and the
// replay that fills them.
func prepare(dir string, tr *replay.Trace, fingerprint string, opts Options) (*Building, error) {
	for _, id := range tr.Nodes {
		if strings.IndexByte(string(id), 0) >= 0 {
			return nil, fmt.Errorf("node ID %q contains a NUL byte", id)
		}
	}
	r, err := replay.New(tr, opts.Registry, replay.Options{Watch: opts.Watch})
	if err != nil {
		return nil, err
	}
	var checker *predicates.Checker
	if opts.Preds != "" {
		// Judged as replay check judges by default: liveness open at the
		// end of a trace that lacks part of the run is not judged.
		if checker, err = predicates.Load(opts.Preds, r, predicates.Options{To: -1, CutShort: tr.Incomplete(tr.Nodes)}); err != nil {
			return nil, err
		}
	}
	if err := replaceable(dir); err != nil {
		return nil, err
	}
	RemoveStale(dir, 0) // the build lock is ours: no one else makes partials of dir
	parent := filepath.Dir(dir)
	if err := checkRoom(parent, roomNeeded(tr.Len())); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(parent, partialPrefixes(dir)[0]+"*")
	if err != nil {
		return nil, fmt.Errorf("create the trace database beside %s: %w", dir, err)
	}
	// The catalog, which holds only Meta, is written last; the first
	// part's store is written from the first step.
	cat, err := badger.OpenManaged(buildOptions(tmp))
	if err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("create trace database %s: %w", tmp, err)
	}
	first, err := createPart(tmp, 0, 0)
	if err != nil {
		cat.Close()
		os.RemoveAll(tmp)
		return nil, err
	}
	ps := &parts{list: []*part{first}}
	b := &builder{tr: tr, r: r, parts: ps, nodes: map[node.ID]*nodeLeaves{}, build: newBuildID(),
		last: map[node.ID]*stepLeaves{}, free: make(chan *stepLeaves, pipeDepth), budget: newLeafBudget(), render: replay.NewRenderer(tr, r.System().Codec), partBytes: cmp.Or(max(opts.PartBytes, 0), PartBytes)}
	meta := Meta{Schema: Schema, Fingerprint: fingerprint, System: tr.Header.System, Bug: tr.Header.Bug,
		Nodes: tr.Nodes, Steps: tr.Len(), Start: tr.Header.Start, Unknown: tr.Unknown,
		SnapshotEvery: SnapshotEvery, Build: b.build}
	if err := b.begin(first); err != nil {
		ps.closeAll()
		cat.Close()
		os.RemoveAll(tmp)
		return nil, err
	}
	for _, f := range tr.Files {
		meta.Files = append(meta.Files, f.Path)
	}
	bg := &Building{DB: &DB{dir: tmp, cat: cat, parts: ps, meta: meta, indexed: new(atomic.Int64)},
		b: b, dir: dir, opts: opts, start: time.Now(), ran: make(chan struct{})}
	b.indexed, b.every = bg.DB.indexed, cmp.Or(opts.PublishEvery, PublishEvery)
	if checker != nil {
		bg.pc = newPredCollector(checker)
	}
	return bg, nil
}

// errNoExchange: the system cannot swap two names in one step.
var errNoExchange = errors.New("cannot exchange two names at once")

// newBuildID names a build: unique among the builds of one folder.
func newBuildID() string {
	var b [12]byte
	rand.Read(b[:])
	return fmt.Sprintf("%d-%x", time.Now().UnixNano(), b)
}

// swapIn renames the database at tmp to dir. A database already at dir
// is moved aside first, not deleted: debuggers may be reading it (the
// files they have open stay theirs); it is removed here if nobody is, or
// by a later build once they are done.
func swapIn(tmp, dir string) error {
	if _, err := os.Stat(dir); err != nil {
		if err := os.Rename(tmp, dir); err != nil {
			return fmt.Errorf("move the trace database into place: %w", err)
		}
		return nil
	}
	old := filepath.Join(filepath.Dir(dir), fmt.Sprintf("%s%d-%d", partialPrefixes(dir)[1], os.Getpid(), time.Now().UnixNano()))
	switch err := exchangeDirs(tmp, dir); {
	case err == nil:
		// The previous database is at tmp now. The new one is in place
		// whatever happens next: failing here would make the caller
		// remove tmp, which is the previous database, readers and all.
		if os.Rename(tmp, old) != nil {
			return nil // left at tmp, a partial name: a later build removes it
		}
	case errors.Is(err, errNoExchange):
		// In two steps: dir is missing for a moment.
		if err := os.Rename(dir, old); err != nil {
			return fmt.Errorf("move the previous trace database %s aside: %w", dir, err)
		}
		if err := os.Rename(tmp, dir); err != nil {
			os.Rename(old, dir)
			return fmt.Errorf("move the trace database into place: %w", err)
		}
	default:
		return fmt.Errorf("move the trace database into place: %w", err)
	}
	if f, err := os.Open(old); err == nil {
		if ok, err := tryLock(f, false); err == nil && ok {
			os.RemoveAll(old)
		}
		f.Close()
	}
	return nil
}

func (db *DB) putMeta(m Meta) error {
	v, err := json.Marshal(m)
	if err != nil {
		return err
	}
	txn := db.cat.NewTransactionAt(latest, true)
	defer txn.Discard()
	if err := txn.Set([]byte{nsMeta}, v); err != nil {
		return err
	}
	if err := txn.CommitAt(metaVersion, nil); err != nil {
		return fmt.Errorf("write %s: %w", db.dir, err)
	}
	// db.meta stays as it is: readers browsing a build read it without a
	// lock, and the complete database is opened afresh from the store.
	return nil
}

type builder struct {
	tr    *replay.Trace
	r     *replay.Replayer
	parts *parts
	// bdb is the store of the part being written (the last of parts),
	// wb its batch; written counts the bytes of keys and values put in it.
	bdb       *badger.DB
	wb        *badger.WriteBatch
	written   int
	base      int // of written, the part's first checkpoints
	partBytes int
	build     string // Meta.Build, written in every part
	render    *replay.Renderer
	nodes     map[node.ID]*nodeLeaves
	fields    int
	// indexed is how many steps readers may read: every write of steps
	// before it is committed.
	indexed   *atomic.Int64
	published time.Time
	every     time.Duration // how often to publish
	// flat and last, of the replay's goroutine: each node's leaves after
	// its last step, whose strings its next leaves share.
	flat state.Flattener
	last map[node.ID]*stepLeaves
	// free holds states the writer is done with, for the replay to
	// reuse; used is the writer's scratch for diffMatched.
	free chan *stepLeaves
	used []bool
	// budget bounds the leaves of the steps in the pipe.
	budget *leafBudget
}

// nodeLeaves is a node's last written state.
type nodeLeaves struct {
	leaves  []state.Leaf
	state   *stepLeaves // whose leaves these are
	deltas  int         // since the last checkpoint
	started bool
}

// work is what the replay hands the writer for one step: everything that
// must be read from the replay before it moves on.
type work struct {
	step  int
	rep   *node.Event // the replayed event's inputs and effects (nil: it did not run here)
	logs  []string    // its log lines
	state *stepLeaves // its node's state after it (when rep is set)
	// leaves is how many leaves of the pipe's budget state holds.
	leaves int
}

// pipeDepth bounds the steps between the replay and the writer: the
// memory a build holds does not depend on the trace's length.
const pipeDepth = 256

// bigLeaves is the most leaves a pooled state may hold room for while
// bigPooled states are pooled already.
const (
	bigLeaves = 4096
	bigPooled = 8
)

// pipeLeaves bounds the leaves of the states in those steps: 256 states
// of a node holding a long log (70,000 leaves each) held 1.5 GB between
// the replay and the writer, and as much again in the free list.
const pipeLeaves = 1 << 21

// leafBudget counts the leaves of the states handed to the writer and
// not yet written, and holds the replay back while they are over
// pipeLeaves (one state, however large, always passes).
type leafBudget struct {
	mu   sync.Mutex
	cond sync.Cond
	held int
}

func newLeafBudget() *leafBudget {
	b := &leafBudget{}
	b.cond.L = &b.mu
	return b
}

func (b *leafBudget) acquire(n int) {
	b.mu.Lock()
	for b.held > 0 && b.held+n > pipeLeaves {
		b.cond.Wait()
	}
	b.held += n
	b.mu.Unlock()
}

func (b *leafBudget) release(n int) {
	b.mu.Lock()
	b.held -= n
	b.mu.Unlock()
	b.cond.Broadcast()
}

// run replays the trace and writes the database in two goroutines: the
// replay (and the predicates) runs here and flattens each step's node
// state, which is all that must happen before the next step changes it;
// a writer renders, diffs and writes to the store meanwhile.
func (b *builder) run(pc *predCollector, progress func(string, int, int), stop func() bool) error {
	ch := make(chan work, pipeDepth)
	werr := make(chan error, 1)
	go func() {
		var err error
		written := 0 // steps written, all of them before the replay stopped
		for w := range ch {
			b.budget.release(w.leaves)
			if err == nil && b.partFull() && w.step > 0 {
				err = b.nextPart(w.step, progress)
			}
			if err == nil {
				// It renders the step: a spilled trace that cannot be
				// read back fails the build, not the process.
				if err = replay.CatchReadBack(func() error { return b.write(w) }); err == nil {
					written = w.step + 1
					if w.step%256 == 255 && time.Since(b.published) > b.every {
						err = b.publish(written, progress)
					}
				}
				if err != nil {
					werr <- err // the replay sees it and stops
				}
			}
		}
		if err == nil {
			err = b.publish(written, progress)
		}
		if err == nil {
			werr <- nil
		}
	}()
	err := replay.CatchReadBack(func() error { return b.replay(ch, werr, pc, stop) })
	close(ch)
	if wrote := <-werr; err == nil {
		err = wrote
	}
	return err
}

func (b *builder) replay(ch chan<- work, werr chan error, pc *predCollector, stop func() bool) error {
	n := b.tr.Len()
	for step := range n {
		if err := b.r.Next(); err != nil {
			return err
		}
		if pc != nil {
			if err := pc.observe(step); err != nil {
				return err
			}
		}
		w := work{step: step}
		if rep := b.r.Replayed(); rep != nil {
			// The replay reuses the event: keep what the writer reads.
			c := *rep
			c.Nondet, c.Logs = nil, nil
			c.Sends = slices.Clone(rep.Sends)
			c.TimersSet = slices.Clone(rep.TimersSet)
			c.TimersCancelled = slices.Clone(rep.TimersCancelled)
			w.rep = &c
			for _, l := range rep.Logs {
				line := l.Level.String() + " " + l.Msg
				if l.Attrs != "" {
					line += " " + l.Attrs
				}
				w.logs = append(w.logs, line)
			}
			// The slices of a state the writer is done with.
			var l *stepLeaves
			select {
			case l = <-b.free:
			default:
				l = new(stepLeaves)
			}
			l.after(&b.flat, b.r.Instance(rep.Node), b.tr.Header.Start, b.last[rep.Node])
			w.state, b.last[rep.Node] = l, l
			// The writer releases them whatever happens to the step,
			// so this wait ends while it reads from the pipe.
			w.leaves = len(l.leaves)
			b.budget.acquire(w.leaves)
		}
		select {
		case ch <- w:
		case err := <-werr: // the writer failed: stop replaying
			werr <- err
			return nil
		}
		if step%stopEvery == 0 && stop != nil && stop() {
			return ErrStopped
		}
	}
	return nil
}

// stopEvery is how many steps a build or a check runs between looks at
// whether to stop: few, since a step may cost milliseconds of predicates.
const stopEvery = 64

// PublishEvery is how often a build makes what it wrote readable (a
// debugger browses a database while it is built) by default.
const PublishEvery = 200 * time.Millisecond

// publish commits every write so far, lets readers read the first n
// steps, and says so to progress.
func (b *builder) publish(n int, progress func(string, int, int)) error {
	if err := checkRoom(b.parts.list[0].dir, roomAlways); err != nil {
		return err
	}
	if err := b.wb.Flush(); err != nil {
		return fmt.Errorf("write the trace database: %w", err)
	}
	b.wb = newBatch(b.bdb)
	b.indexed.Store(int64(n))
	b.published = time.Now()
	if progress != nil {
		progress("indexing", n, b.tr.Len())
	}
	return nil
}

// write writes one step: its record in the step index and what it changed
// in its node's state.
func (b *builder) write(w work) error {
	tr, step := b.tr, w.step
	ev := tr.Event(step)
	rec := Step{Node: ev.Node, Seq: ev.Seq, Lamport: ev.Lamport, Kind: ev.Kind, Time: int64(tr.Time(ev)),
		MsgType: ev.MsgType, From: ev.From, SendStep: -1, Timer: ev.TimerName,
		PrevOnNode: -1, NextOnNode: -1, WokenAt: -1, Logs: w.logs}
	// The node's neighbouring steps, from the trace's per-node index
	// (arrays of them would cost 8 bytes per step for the whole build).
	steps := tr.NodeSteps(ev.Node)
	if i, ok := slices.BinarySearch(steps, step); ok {
		if i > 0 {
			rec.PrevOnNode = steps[i-1]
		}
		if i+1 < len(steps) {
			rec.NextOnNode = steps[i+1]
		}
	}
	if s, ok := tr.SendStep(ev); ok {
		rec.SendStep = s
	}
	if ev.Kind == node.KindTask {
		if s, ok := tr.Step(ev.Node, ev.WakeSeq); ok {
			rec.WokenAt = s
		}
	}
	for i, s := range ev.Sends {
		rec.Sends = append(rec.Sends, Send{To: s.To, Type: s.Type, Receipts: tr.Receipts(ev.SentMsg(i))})
	}
	// The replayed event carries the payloads of its sends, which the
	// trace does not record: lost messages are shown with their fields.
	lineEv := ev
	if w.rep != nil && len(w.rep.Sends) == len(ev.Sends) {
		lineEv = w.rep
	}
	rec.Line = b.render.Line(step, lineEv)
	if w.rep != nil {
		changed, err := b.writeState(step, ev.Node, w.state)
		if err != nil {
			return err
		}
		rec.Changed = changed
	}
	v, err := cbor.Marshal(rec)
	if err != nil {
		return err
	}
	return b.put(stepKey(step), v, metaVersion)
}

// put writes a key's value at version ts in the part being written.
func (b *builder) put(k, v []byte, ts uint64) error {
	b.written += len(k) + len(v)
	if err := b.wb.SetEntryAt(badger.NewEntry(k, v), ts); err != nil {
		return fmt.Errorf("write the trace database: %w", err)
	}
	return nil
}

// partFull tells whether the part being written holds enough: partBytes
// besides its first checkpoints, and at least four times as much as them,
// so that copies of the nodes' states are at most a fifth of a part
// whatever their size.
func (b *builder) partFull() bool {
	return b.written-b.base >= max(b.partBytes, 4*b.base)
}

// nextPart ends the part being written before step first and starts the
// next: every step before first is made readable, the new part begins
// with a checkpoint of every node that has run (so that its states are
// read from it alone), and the finished part is compacted and closed,
// which releases the memory Badger held for it.
func (b *builder) nextPart(first int, progress func(string, int, int)) error {
	if err := b.publish(first, progress); err != nil {
		return err
	}
	ps := b.parts
	p, err := createPart(filepath.Dir(ps.list[0].dir), len(ps.list), first)
	if err != nil {
		return err
	}
	old := ps.list[len(ps.list)-1]
	// Listed at once, so that whatever fails below, closing the database
	// closes the new store; readers cannot reach it before its steps are
	// published.
	ps.mu.Lock()
	ps.list = append(ps.list, p)
	ps.mu.Unlock()
	if err := b.begin(p); err != nil {
		return err
	}
	for _, id := range b.tr.Nodes {
		if nl := b.nodes[id]; nl != nil && nl.leaves != nil {
			if err := b.put(nodeKey(nsSnapshot, id), encodeLeaves(nl.leaves), version(first-1)); err != nil {
				return err
			}
			nl.deltas = 0
		}
	}
	b.base = b.written
	if err := b.wb.Flush(); err != nil {
		return fmt.Errorf("write the trace database: %w", err)
	}
	b.wb = newBatch(p.bdb)
	return ps.finish(old)
}

// createPart creates the store of part i of the database being built in
// dir, which holds the steps from first.
func createPart(dir string, i, first int) (*part, error) {
	p := &part{dir: partDir(dir, i), first: first, checked: true}
	bdb, err := badger.OpenManaged(buildOptions(p.dir))
	if err != nil {
		return nil, fmt.Errorf("create trace database part %s: %w", p.dir, err)
	}
	p.bdb = bdb
	return p, nil
}

// begin makes p the part being written, starting with the build's name.
func (b *builder) begin(p *part) error {
	b.bdb, b.wb, b.written = p.bdb, newBatch(p.bdb), 0
	return b.put([]byte{nsBuild}, []byte(b.build), metaVersion)
}

// Leaves returns the observed state of a replayed node as the database
// stores it: the pseudo-fields @status and @timers, then state.Flatten of
// the handler (nothing more while the node is down).
func Leaves(inst *node.Instance, start int64) []state.Leaf {
	var l stepLeaves
	l.after(new(state.Flattener), inst, start, nil)
	return l.leaves
}

// stepLeaves is a node's state after a step, as Leaves: its leaves, and
// for each the index of the leaf of the same path in the state after the
// node's step before (-1: a new path), which tells the writer what
// changed without indexing paths.
type stepLeaves struct {
	leaves []state.Leaf
	from   []int
	memo   state.Memo // what the flattening remembers of long slices
}

// after sets l (reusing its slices) to the leaves of inst, sharing the
// strings of the node's leaves the last time (last, nil: none): a step
// changes a few of them.
func (l *stepLeaves) after(f *state.Flattener, inst *node.Instance, start int64, last *stepLeaves) {
	var prev []state.Leaf
	var prevMemo *state.Memo
	if last != nil {
		prev, prevMemo = last.leaves, &last.memo
	}
	status := "down"
	if inst.Up() {
		status = "up"
	}
	var timers []string
	for _, t := range inst.Timers() {
		timers = append(timers, fmt.Sprintf("%s(%d) at %v", t.Name, t.ID, time.Duration(t.Due-start)))
	}
	// The pseudo-fields come first and are the only paths with "@".
	pseudo := 0
	for pseudo < len(prev) && strings.HasPrefix(prev[pseudo].Path, "@") {
		pseudo++
	}
	out, from := l.leaves[:0], l.from[:0]
	add := func(path, value string) {
		j := slices.IndexFunc(prev[:pseudo], func(p state.Leaf) bool { return p.Path == path })
		out, from = append(out, state.Leaf{Path: path, Value: value}), append(from, j)
	}
	add(StatusPath, status)
	add(TimersPath, strings.Join(timers, ", "))
	for _, t := range inst.Tasks() {
		what := "blocked on " + t.On
		if t.State != "blocked" {
			what = t.State + ", woken by " + t.On
		}
		add(fmt.Sprintf("%s[%d]", TasksPath, t.ID), fmt.Sprintf("%s: %s since %v (seq %d)", t.Name, what, time.Duration(t.Since-start), t.SinceSeq))
	}
	if h := inst.Handler(); h != nil && inst.Up() {
		out = f.AppendMemo(out, h, prev[pseudo:], prevMemo, &l.memo)
		for _, j := range f.Matched() {
			if j >= 0 {
				j += pseudo
			}
			from = append(from, j)
		}
	} else {
		l.memo = state.Memo{} // nothing flattened: nothing to remember
	}
	l.leaves, l.from = out, from
}

// writeState writes what step changed in a node's state: the delta, the
// new field versions and, every SnapshotEvery deltas, a checkpoint.
func (b *builder) writeState(step int, id node.ID, st *stepLeaves) (int, error) {
	nl := b.nodes[id]
	if nl == nil {
		nl = &nodeLeaves{deltas: math.MaxInt32} // its first state is a checkpoint
		b.nodes[id] = nl
	}
	cur := st.leaves
	if cap(b.used) < len(nl.leaves) {
		b.used = make([]bool, len(nl.leaves))
	}
	d, ok := diffMatched(nl.leaves, cur, st.from, b.used)
	if !ok {
		d = diffLeaves(nl.leaves, cur)
	}
	// The node's state before is no one's now: the replay flattened
	// this step against it and keeps this one as the next's. A big one
	// is kept for reuse only while few are: the pool filled up while
	// states were small (a step each), and every state kept in it grew
	// to the largest (256 copies of a 70,000-leaf log, 1 GB).
	if old := nl.state; old != nil && (cap(old.leaves) <= bigLeaves || len(b.free) < bigPooled) {
		select {
		case b.free <- old:
		default:
		}
	}
	nl.leaves, nl.state = cur, st
	if d.empty() {
		return 0, nil
	}
	ts := version(step)
	set := func(k, v []byte) error { return b.put(k, v, ts) }
	if err := set(nodeKey(nsDelta, id), d.encode()); err != nil {
		return 0, err
	}
	for _, p := range d.removed {
		k := fieldKey(id, p)
		b.written += len(k)
		if err := b.wb.DeleteAt(k, ts); err != nil {
			return 0, err
		}
	}
	for _, c := range d.set {
		if err := set(fieldKey(id, c.path), []byte(c.value)); err != nil {
			return 0, err
		}
	}
	b.fields += len(d.removed) + len(d.set)
	nl.deltas++
	if nl.deltas >= checkpointEvery(len(cur)) {
		if err := set(nodeKey(nsSnapshot, id), encodeLeaves(cur)); err != nil {
			return 0, err
		}
		nl.deltas = 0
	}
	return len(d.removed) + len(d.set), nil
}

// newBatch starts a write batch with one transaction in flight at a time.
// More let a failed write kill the process: when Badger cannot create a
// memtable (its folder removed, no file descriptors left) it leaves the
// store without one, and the next transaction already queued asserts
// that there is one and exits (log.Fatal). With one in flight, the
// failure reaches the batch before it sends another.
func newBatch(bdb *badger.DB) *badger.WriteBatch {
	wb := bdb.NewManagedWriteBatch()
	wb.SetMaxPendingTxns(1)
	return wb
}

// IsDivergence reports whether err is a replay divergence.
func IsDivergence(err error) bool {
	var d *replay.Divergence
	return errors.As(err, &d)
}
