package plugins_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/wasmtask/wasmtask/plugins"
)

func Example() {
	dir, _ := os.MkdirTemp("", "tools")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "echo.wasm"), []byte("\x00asm v1"), 0o644)
	os.WriteFile(filepath.Join(dir, ".echo.wasm.swp"), []byte("editor swap"), 0o644)

	old, _ := plugins.Scan(context.Background(), plugins.Config{Dir: dir})
	for _, m := range old.Modules() {
		fmt.Println(m.Name, m.Size, m.Digest[:12])
	}

	os.WriteFile(filepath.Join(dir, "echo.wasm"), []byte("\x00asm v2"), 0o644)
	os.WriteFile(filepath.Join(dir, "time.wasm"), []byte("\x00asm"), 0o644)
	cur, _ := plugins.Scan(context.Background(), plugins.Config{Dir: dir})
	d := plugins.Compare(old, cur)
	fmt.Println("added", len(d.Added), "changed", len(d.Changed), "removed", len(d.Removed))
	// Output:
	// echo 7 54b694019c65
	// added 1 changed 1 removed 0
}
