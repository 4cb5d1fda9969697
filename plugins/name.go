package plugins

import (
	"fmt"
	"strings"
)

// wasmExt is the file name extension of a tool module.
const wasmExt = ".wasm"

// maxNameLen bounds a module name (the file name without wasmExt).
const maxNameLen = 128

// isCandidate reports whether a file name (a base name, not a path) is
// looked at as a tool module: it ends in ".wasm" and does not start with a
// dot. Editor and copy temporaries (".x.wasm.swp", "x.wasm~", "x.wasm.tmp",
// "#x.wasm#", ".x.wasm") are therefore never candidates, nor are their
// events a reason to rescan. A candidate may still be refused by
// [moduleName] for a bad name.
func isCandidate(base string) bool {
	return len(base) > len(wasmExt) &&
		strings.HasSuffix(base, wasmExt) &&
		base[0] != '.' &&
		!strings.ContainsAny(base, "/\\\x00")
}

// moduleName returns the module name of a candidate file name: the name
// without ".wasm". A name is 1 to 128 characters of A-Z a-z 0-9 _ . - and
// starts with a letter or digit; any other candidate is an [ErrBadName]
// problem, so that a module name is always safe to show, log and use as a
// prefix.
func moduleName(base string) (string, error) {
	if !isCandidate(base) {
		return "", fmt.Errorf("%w: %q is not a .wasm file name", ErrBadName, base)
	}
	name := strings.TrimSuffix(base, wasmExt)
	if len(name) > maxNameLen {
		return "", fmt.Errorf("%w: %q is longer than %d characters", ErrBadName, name, maxNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case (c == '_' || c == '.' || c == '-') && i > 0:
		default:
			return "", fmt.Errorf("%w: %q (want 1-%d of A-Z a-z 0-9 _ . -, starting with a letter or digit)", ErrBadName, name, maxNameLen)
		}
	}
	return name, nil
}
