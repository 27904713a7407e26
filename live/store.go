package live

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"

	"github.com/dgraph-io/badger/v4"

	"github.com/replaycheck/replaycheck/node"
)

// Keys in the node's badger store: the handler's Disk keys live under
// dataPrefix, the runtime's own bookkeeping under metaPrefix, so that no
// application key can collide with the runtime's.
const (
	dataPrefix = "d"
	metaPrefix = "m"

	metaReserve = metaPrefix + "reserve" // seq and Lamport reservation, 2 x uint64
	metaSegment = metaPrefix + "segment" // next trace segment number, uint64
)

// diskStore is a node's durable store on badger. Writes made during one
// event are buffered and committed together after the event, before any of
// its messages leave the node: a peer never sees the effect of a write
// that a crash could still lose. Reads see the event's own writes.
type diskStore struct {
	db      *badger.DB
	pending map[string][]byte // nil value: delete
	order   []string          // pending keys in first-write order
}

// openStore opens (creating if needed) the badger store in dir.
func openStore(dir string, syncWrites bool, log *slog.Logger) (*diskStore, error) {
	opts := badger.DefaultOptions(dir).
		WithSyncWrites(syncWrites).
		WithLogger(badgerLogger{log}).
		WithMemTableSize(16 << 20).
		WithValueLogFileSize(64 << 20).
		WithBlockCacheSize(16 << 20).
		WithIndexCacheSize(8 << 20)
	db, err := badger.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	return &diskStore{db: db, pending: map[string][]byte{}}, nil
}

// get reads a key, pending writes first.
func (s *diskStore) get(key string) ([]byte, bool, error) {
	if v, ok := s.pending[key]; ok {
		return v, v != nil, nil
	}
	var out []byte
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(key))
		if err != nil {
			return err
		}
		out, err = item.ValueCopy(nil)
		return err
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read %q: %w", key, err)
	}
	return out, true, nil
}

func (s *diskStore) put(key string, value []byte) {
	if value == nil {
		value = []byte{}
	}
	if _, ok := s.pending[key]; !ok {
		s.order = append(s.order, key)
	}
	s.pending[key] = value
}

func (s *diskStore) del(key string) {
	if _, ok := s.pending[key]; !ok {
		s.order = append(s.order, key)
	}
	s.pending[key] = nil
}

// commit writes the pending writes in one batch.
func (s *diskStore) commit() error {
	if len(s.order) == 0 {
		return nil
	}
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	for _, k := range s.order {
		var err error
		if v := s.pending[k]; v != nil {
			err = wb.Set([]byte(k), v)
		} else {
			err = wb.Delete([]byte(k))
		}
		if err != nil {
			return fmt.Errorf("store write %q: %w", k, err)
		}
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("store commit: %w", err)
	}
	clear(s.pending)
	s.order = s.order[:0]
	return nil
}

func (s *diskStore) close() error { return s.db.Close() }

// getUint64s reads a meta value of n uint64s.
func (s *diskStore) getUint64s(key string, n int) ([]uint64, bool, error) {
	b, ok, err := s.get(key)
	if err != nil || !ok {
		return nil, false, err
	}
	if len(b) != 8*n {
		return nil, false, fmt.Errorf("runtime record %q has %d bytes, want %d", key, len(b), 8*n)
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return out, true, nil
}

func (s *diskStore) putUint64s(key string, xs ...uint64) {
	b := make([]byte, 0, 8*len(xs))
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint64(b, x)
	}
	s.put(key, b)
}

// dataView is the node.Store the Instance writes through: the handler's
// keys, under dataPrefix.
type dataView struct{ s *diskStore }

func (d dataView) Get(key string) ([]byte, bool) {
	v, ok, err := d.s.get(dataPrefix + key)
	if err != nil {
		panic(&node.SourceError{Err: err})
	}
	return v, ok
}

func (d dataView) Put(key string, value []byte) { d.s.put(dataPrefix+key, value) }
func (d dataView) Delete(key string)            { d.s.del(dataPrefix + key) }

// badgerLogger passes badger's warnings and errors on; its info lines
// (compactions, value log GC) are noise for a node's operator.
type badgerLogger struct{ log *slog.Logger }

func (l badgerLogger) Errorf(f string, args ...any) { l.log.Error("store: " + fmt.Sprintf(f, args...)) }
func (l badgerLogger) Warningf(f string, args ...any) {
	l.log.Warn("store: " + fmt.Sprintf(f, args...))
}
func (l badgerLogger) Infof(string, ...any)  {}
func (l badgerLogger) Debugf(string, ...any) {}
