package statedb_test

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"testing"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/statedb"
)

func TestZZProf(t *testing.T) {
	trace := os.Getenv("ZZTRACE")
	if trace == "" {
		t.Skip()
	}
	tr, err := replay.Load(trace)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	f, _ := os.Create("/tmp/idxwork/heap_load.pprof")
	pprof.WriteHeapProfile(f)
	f.Close()
	dir := filepath.Join(t.TempDir(), "x.db")
	var ms runtime.MemStats
	n := 0
	db, _, err := statedb.Ensure([]string{trace}, dir, statedb.Options{Registry: examples.Registry(), Trace: tr, Force: true,
		Progress: func(_ string, done, total int) {
			n++
			if n == total/2048/2 {
				runtime.ReadMemStats(&ms)
				f, _ := os.Create("/tmp/idxwork/heap_mid.pprof")
				pprof.WriteHeapProfile(f)
				f.Close()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	t.Logf("mid heap inuse %d MB sys %d MB", ms.HeapInuse>>20, ms.Sys>>20)
}
