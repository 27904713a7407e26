package cli

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// A trace database whose table file was cut short made replay state,
// history and why panic inside Badger. All three say in one line that the
// database is damaged and answer by replaying (exit 0, the same answer),
// building nothing: why rebuilt it, as a side effect its help disowns.
func TestADamagedDatabaseIsOneLineNotAPanic(t *testing.T) {
	run := inProcess()
	trace := demoTrace(t, run)
	queries := [][]string{
		{"state", trace, "--at", "273", "--node", "n5"},
		{"history", trace, "--node", "n5", "--field", "Agent.AcceptedValue"},
		{"why", trace, "--at", "273", "--node", "n5", "--field", "Agent.AcceptedValue"},
	}
	var want []string
	for _, q := range queries {
		o, e, code := run(q...)
		if code != 0 {
			t.Fatalf("%s by replay: exit %d %s", q[0], code, e)
		}
		want = append(want, o)
	}
	if _, e, code := run("index", trace); code != 0 {
		t.Fatalf("index: %s", e)
	}
	cut := func() {
		t.Helper()
		names, _ := filepath.Glob(filepath.Join(trace+".db", "*", "*.sst"))
		cat, _ := filepath.Glob(filepath.Join(trace+".db", "*.sst"))
		names = append(names, cat...)
		if len(names) == 0 {
			t.Fatal("no table files in the database")
		}
		for _, n := range names {
			// Cut where the file's last four bytes (the length of the
			// table's checksum) say more than it holds.
			b, _ := os.ReadFile(n)
			cut := len(b) / 2
			for cut > 8 && int(binary.BigEndian.Uint32(b[cut-4:cut])) <= cut {
				cut--
			}
			if err := os.Truncate(n, int64(cut)); err != nil {
				t.Fatal(err)
			}
		}
	}
	cut()
	for i, q := range queries {
		o, e, code := run(q...)
		if code != 0 || o != want[i] {
			t.Fatalf("%s on a damaged database: exit %d\n%s%s", q[0], code, o, e)
		}
		if strings.Count(e, "\n") != 1 || !strings.Contains(e, "damaged") || !strings.Contains(e, ".sst") || !strings.Contains(e, "replaying instead") {
			t.Fatalf("%s should say in one line that the database is damaged: %q", q[0], e)
		}
	}
	if _, e, _ := run("state", trace, "--at", "273"); !strings.Contains(e, "damaged") {
		t.Fatalf("why rebuilt the database: state says %q", e)
	}
}

// Something else at a database's name (a file, a folder of the user's
// notes) is not damage: state and history said it was and that index
// --force rebuilds it, which index then refused. They say what is there
// and answer by replaying, and so does why (it refused, exit 2).
func TestSomethingElseAtTheDatabasesName(t *testing.T) {
	dir := t.TempDir()
	run := inProcess()
	trace := filepath.Join(dir, "p.lz4")
	if _, e, code := run("sim", "paxos", "--seed", "1", "--steps", "300", "-o", trace); code != 0 {
		t.Fatalf("sim: %s", e)
	}
	db := trace + ".db"
	for _, c := range []struct {
		name, want string
		make       func()
	}{
		{"a file", "is a file, not a trace database", func() { os.WriteFile(db, []byte("notes"), 0o644) }},
		{"a folder of notes", "exists and is not a trace database", func() {
			os.Mkdir(db, 0o755)
			os.WriteFile(filepath.Join(db, "notes.txt"), []byte("mine"), 0o644)
		}},
		// A MANIFEST is no proof: index emptied such a folder, exit 0.
		{"a packaging tree with a MANIFEST", "exists and is not a trace database (it holds README)", func() {
			os.MkdirAll(filepath.Join(db, "src"), 0o755)
			os.WriteFile(filepath.Join(db, "MANIFEST"), []byte("Manifest-Version: 1.0\n"), 0o644)
			os.WriteFile(filepath.Join(db, "README"), []byte("mine"), 0o644)
			os.WriteFile(filepath.Join(db, "src", "main.go"), []byte("package main\n"), 0o644)
		}},
		// Another program's Badger store: index emptied it, exit 0.
		{"another program's Badger store", "exists and is not a trace database (a Badger store with no trace database", func() {
			bdb, err := badger.Open(badger.DefaultOptions(db).WithLogger(nil))
			if err != nil {
				t.Fatal(err)
			}
			bdb.Update(func(txn *badger.Txn) error { return txn.Set([]byte("k"), []byte("the app's")) })
			bdb.Close()
		}},
	} {
		os.RemoveAll(db)
		c.make()
		for _, q := range [][]string{{"state", trace, "--at", "100", "--node", "n1"}, {"history", trace, "--node", "n1", "--field", "Agent.Promised"},
			{"why", trace, "--at", "100", "--node", "n1", "--field", "Agent.Promised"}} {
			_, e, code := run(q...)
			if code != 0 || !strings.Contains(e, c.want) || strings.Contains(e, "damaged") || !strings.Contains(e, "replaying instead") {
				t.Errorf("%s with %s at %s: exit %d, stderr %q", q[0], c.name, db, code, e)
			}
		}
		for _, q := range [][]string{{"index", trace}, {"index", trace, "--force"}} {
			if _, e, code := run(q...); code != 2 || !strings.Contains(e, c.want) {
				t.Errorf("%v with %s at %s: exit %d, stderr %q, want exit 2 saying %q", q, c.name, db, code, e, c.want)
			}
		}
		if c.name != "a file" {
			if _, err := os.Stat(filepath.Join(db, "MANIFEST")); c.name != "a folder of notes" && err != nil {
				t.Errorf("index took %s: %v", c.name, err)
			}
			if ents, _ := os.ReadDir(db); len(ents) == 0 {
				t.Errorf("index emptied %s", c.name)
			}
		}
	}
	// A database a file browser looked into is still one.
	os.RemoveAll(db)
	if _, e, code := run("index", trace); code != 0 {
		t.Fatalf("index: exit %d %s", code, e)
	}
	os.WriteFile(filepath.Join(db, ".DS_Store"), []byte("finder"), 0o644)
	if _, e, code := run("index", trace, "--force"); code != 0 {
		t.Fatalf("index --force over a database holding .DS_Store: exit %d %s", code, e)
	}
}
