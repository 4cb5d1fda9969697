package wasmrt

import (
	"context"
	"encoding/json"
	"testing"
)

// BenchmarkGoStart measures one call of a Go-built tool (a fresh instance
// each) with each start-up saving off and on, side by side in one run:
// "segments" keeps the module's data segments as they are, "merged" merges
// them at load (datamerge.go).
func BenchmarkGoStart(b *testing.B) {
	ctx := context.Background()
	wasm := defaultTool("demo")(b)
	for _, v := range []struct {
		name  string
		setup func(*Runtime)
	}{
		{"segments", func(r *Runtime) { r.keepSegments = true }},
		{"merged", func(*Runtime) {}},
	} {
		b.Run(v.name, func(b *testing.B) {
			r := newRuntime(b, Config{})
			v.setup(r)
			m, err := r.Load(ctx, "demo", wasm)
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close(ctx)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := m.Call(ctx, "word_count", json.RawMessage(`{"text":"a b c"}`), testLimits, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
