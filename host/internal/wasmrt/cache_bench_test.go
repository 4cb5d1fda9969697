package wasmrt

import (
	"context"
	"testing"

	"github.com/wasmtask/wasmtask/host/internal/wasmcode"
)

// BenchmarkCacheStage measures what a warm load of a module spends on the
// compile cache's checks, beyond what wazero's own file cache costs: read
// the module's entry (fstat, bounded read), check its MAC, write its files
// into a private directory, look for what wazero wrote, and remove the
// directory. wazero reading the staged file is not in it (it read the same
// bytes from the shared directory before); BenchmarkLoad's warm-cache-dir
// runs measure the whole load.
func BenchmarkCacheStage(b *testing.B) {
	for _, bm := range benchModules {
		b.Run(bm.name, func(b *testing.B) {
			wasm := bm.wasm(b)
			r := newRuntime(b, cacheConfig(b, b.TempDir(), 1024))
			m, err := r.Load(context.Background(), bm.name, wasm, loadLimits)
			if err != nil {
				b.Fatal(err)
			}
			m.Close(context.Background())
			g, err := guardModule(wasm, false, 0)
			if err != nil {
				b.Fatal(err)
			}
			inst := wasmcode.MergeDataSection(g.Wasm)
			before := r.disk.Counts()
			for b.Loop() {
				s := r.disk.Stage(bm.name, inst)
				if s == nil {
					b.Fatal("no stage")
				}
				s.Publish() // finds nothing written: the entry was read
				s.Close()
			}
			after := r.disk.Counts()
			if got := after.Restored - before.Restored; got != int64(b.N) {
				b.Fatalf("%d of %d stages restored the entry", got, b.N)
			}
			if after.Stored != before.Stored {
				b.Fatalf("%d entries stored: a stage found files wazero wrote", after.Stored-before.Stored)
			}
		})
	}
}
