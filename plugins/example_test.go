package plugins_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/plugins"
)

func Example() {
	dir, _ := os.MkdirTemp("", "tools")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "echo.wasm"), []byte("\x00asm v1"), 0o644)
	os.WriteFile(filepath.Join(dir, ".echo.wasm.swp"), []byte("editor swap"), 0o644)

	snap, err := plugins.Scan(context.Background(), plugins.Config{Dir: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range snap.Modules() {
		fmt.Println(m.Name, m.Size, m.Digest)
	}
	fmt.Println(plugins.Digest([]byte("\x00asm v1")))
	// Output:
	// echo 7 sha256:54b694019c655384dffc01a0181634c01151fad4574cdfd79d2202058e20d5d5
	// sha256:54b694019c655384dffc01a0181634c01151fad4574cdfd79d2202058e20d5d5
}

// manifestLoader stands for the host's Loader: a real one compiles the Wasm
// and runs it once to get its manifest; this one takes the file's content
// as the manifest. Either way the manifest is abi.DecodeManifest's.
type manifestLoader struct{}

func (manifestLoader) Load(ctx context.Context, m plugins.Module, wasm []byte) (string, *abi.Manifest, error) {
	man, err := abi.DecodeManifest(wasm)
	if err != nil {
		return "", nil, err
	}
	return "compiled " + m.Name, man, nil
}

func (manifestLoader) Release(string) {}

func ExampleBuild() {
	dir, _ := os.MkdirTemp("", "tools")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "greet.wasm"), []byte(`{"abi":1,"tools":[{"name":"hello"}]}`), 0o644)
	os.WriteFile(filepath.Join(dir, "broken.wasm"), []byte(`{"abi":1,"tools":[]}`), 0o644)

	snap, err := plugins.Scan(context.Background(), plugins.Config{Dir: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	gen, _ := plugins.Build(context.Background(), nil, snap, manifestLoader{}, plugins.Rules{})
	for _, l := range gen.Modules() {
		for _, t := range l.Manifest.Tools {
			fmt.Printf("%s: tool %s (task support %s), %s\n", l.Module.Name, t.Name, t.TaskSupport, l.Compiled)
		}
	}
	for _, p := range gen.Problems() {
		fmt.Printf("%s: %v\n", p.Name, p.Err)
	}
	// Output:
	// greet: tool hello (task support forbidden), compiled greet
	// broken: module failed to load: invalid manifest: declares no tools (nor resources or prompts)
}
