package wasmrt

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSandboxFilesAndEnv(t *testing.T) {
	r := newRuntime(t, Config{})
	m := load(t, r, "fsguest")
	base := t.TempDir()
	dir, outside := filepath.Join(base, "dir"), filepath.Join(base, "outside")
	for _, d := range []string{dir, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "hello.txt"), "hi there\n")
	write(filepath.Join(outside, "secret.txt"), "secret\n")
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../outside/secret.txt", filepath.Join(dir, "escape-rel")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("hello.txt", filepath.Join(dir, "inner")); err != nil {
		t.Fatal(err)
	}
	ro := with(Limits{Mounts: []Mount{{HostDir: dir, GuestPath: "/data"}}})
	rw := with(Limits{Mounts: []Mount{{HostDir: dir, GuestPath: "/data", Write: true}}})

	tests := []struct {
		name, tool, path string
		lim              Limits
		want             string
	}{
		{"no files by default", "read", "/etc/passwd", testLimits, "cannot open"},
		{"no mount by default", "read", "/data/hello.txt", testLimits, "cannot open"},
		{"read a mounted file", "read", "/data/hello.txt", ro, "hi there"},
		{"symlink inside the mount", "read", "/data/inner", ro, "hi there"},
		{"absolute symlink out of the mount", "read", "/data/escape", ro, "cannot open"},
		{"relative symlink out of the mount", "read", "/data/escape-rel", ro, "cannot open"},
		{"dot-dot out of the mount", "read", "/data/../outside/secret.txt", ro, "cannot open"},
		{"escape through a writable mount", "read", "/data/escape", rw, "cannot open"},
		{"write to a read-only mount", "write", "/data/new.txt", ro, "cannot write"},
		{"write through a symlink out", "write", "/data/escape", rw, "cannot write"},
		{"write to a writable mount", "write", "/data/new.txt", rw, "ok"},
		{"read back from a writable mount", "read", "/data/new.txt", rw, "written"},
		{"no environment by default", "env", "HOME", testLimits, "(unset)"},
		{"granted environment", "env", "HOME", with(Limits{Env: map[string]string{"HOME": "/home/tool"}}), "/home/tool"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := callText(t, m, tt.tool, `{"path":"`+tt.path+`"}`, tt.lim, nil)
			if got != tt.want {
				t.Errorf("%s %s = %q, want %q", tt.tool, tt.path, got, tt.want)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != "secret\n" {
		t.Errorf("file outside the mount now holds %q, want it unchanged", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "new.txt")); string(b) != "written\n" {
		t.Errorf("file written through the mount holds %q, want %q", b, "written\n")
	}
}
