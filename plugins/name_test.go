package plugins

import (
	"errors"
	"strings"
	"testing"
)

func TestModuleName(t *testing.T) {
	tests := []struct {
		base      string
		candidate bool
		name      string // "" when moduleName fails
	}{
		{"echo.wasm", true, "echo"},
		{"a.wasm", true, "a"},
		{"my-tool_v2.1.wasm", true, "my-tool_v2.1"},
		{"UPPER9.wasm", true, "UPPER9"},
		{".wasm", false, ""},
		{".echo.wasm", false, ""},
		{".echo.wasm.swp", false, ""},
		{"echo.wasm~", false, ""},
		{"echo.wasm.tmp", false, ""},
		{"echo.tmp", false, ""},
		{"#echo.wasm#", false, ""},
		{"echo.WASM", false, ""},
		{"echo.wat", false, ""},
		{"echo", false, ""},
		{"sub/echo.wasm", false, ""},
		{"-echo.wasm", true, ""},
		{"_echo.wasm", true, ""},
		{"my tool.wasm", true, ""},
		{"é.wasm", true, ""},
		{"a..wasm", true, "a."},
		{strings.Repeat("x", 128) + ".wasm", true, strings.Repeat("x", 128)},
		{strings.Repeat("x", 129) + ".wasm", true, ""},
	}
	for _, tt := range tests {
		if got := isCandidate(tt.base); got != tt.candidate {
			t.Errorf("isCandidate(%q) = %v, want %v", tt.base, got, tt.candidate)
		}
		got, err := moduleName(tt.base)
		if got != tt.name {
			t.Errorf("moduleName(%q) = %q, %v; want %q", tt.base, got, err, tt.name)
		}
		if (err != nil) != (tt.name == "") || err != nil && !errors.Is(err, ErrBadName) {
			t.Errorf("moduleName(%q) error = %v, want ErrBadName iff no name", tt.base, err)
		}
	}
}

func FuzzModuleName(f *testing.F) {
	for _, s := range []string{"echo.wasm", ".x.wasm.swp", "x.wasm~", "a/b.wasm", "\x00.wasm", "é.wasm", ".wasm"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, base string) {
		name, err := moduleName(base)
		if err != nil {
			if !errors.Is(err, ErrBadName) {
				t.Fatalf("moduleName(%q): error %v does not wrap ErrBadName", base, err)
			}
			return
		}
		if !isCandidate(base) {
			t.Fatalf("moduleName(%q) = %q but isCandidate is false", base, name)
		}
		if name+wasmExt != base {
			t.Fatalf("moduleName(%q) = %q, not the base without %s", base, name, wasmExt)
		}
		if name == "" || len(name) > maxNameLen || strings.ContainsAny(name, "/\\ \x00~#") || name[0] == '.' || name[0] == '-' {
			t.Fatalf("moduleName(%q) = %q: unsafe name accepted", base, name)
		}
	})
}
