package live

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/pierrec/lz4/v4"
)

// The cost of keeping room for a stop notice: writing a 64 MiB lz4
// stream through a unitFile to a real file, with and without the
// fallocate reservation (docs/performance.md, session 21).
func BenchmarkUnitFileWrite(b *testing.B) {
	var stream bytes.Buffer
	zw := lz4.NewWriter(&stream)
	r := rand.New(rand.NewPCG(1, 2))
	chunk := make([]byte, 64<<10)
	for range 1024 {
		for i := range chunk {
			chunk[i] = 'a' + byte(r.IntN(8))
		}
		zw.Write(chunk)
	}
	zw.Close()
	data := stream.Bytes()
	for _, reserve := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "reserve"}[reserve]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				f, err := os.Create(filepath.Join(b.TempDir(), "t.lz4"))
				if err != nil {
					b.Fatal(err)
				}
				u := &unitFile{f: f}
				if reserve {
					u.reserve = fileReserver(f)
				}
				for p := data; len(p) > 0; {
					n := min(len(p), 32<<10)
					if _, err := u.Write(p[:n]); err != nil {
						b.Fatal(err)
					}
					p = p[n:]
				}
				f.Close()
			}
		})
	}
}
