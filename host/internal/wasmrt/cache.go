package wasmrt

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// diskCache is the compile cache on disk: one directory per module content
// (the instrumented bytes), each holding wazero's file cache for that
// module alone. Owning the directory per module is what lets the host bound
// the cache, evict it least recently used first, and throw away an entry
// wazero cannot read, none of which wazero's own file cache does: its file
// names are keyed by values internal to wazero, it never deletes anything,
// and a corrupt entry fails the compile.
//
// Several servers may share the directory: wazero writes entries by rename,
// a reader keeps a file it opened even when another server evicts it, and a
// write into an evicted directory fails the compile, which is then done
// again without the disk (see Module.compile).
type diskCache struct {
	dir      string
	maxBytes int64
	mu       sync.Mutex // one prune at a time in this process
}

// entryPrefix names the cache's entries, so that a prune never removes a
// file it did not make, whatever else the directory holds.
const entryPrefix = "m-"

// openDiskCache creates dir if needed and checks that only this user can
// write it: the cache holds native code the server runs.
func openDiskCache(dir string, maxMiB int) (*diskCache, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("wasmrt: compile cache %q: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("wasmrt: compile cache: %w", err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("wasmrt: compile cache: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("wasmrt: compile cache %s is not a directory", abs)
	}
	if err := ownedPrivately(fi); err != nil {
		return nil, fmt.Errorf("wasmrt: compile cache %s: %w (it holds native code the server runs)", abs, err)
	}
	return &diskCache{dir: abs, maxBytes: int64(maxMiB) << 20}, nil
}

// ownedPrivately refuses a directory another user owns or may write.
func ownedPrivately(fi fs.FileInfo) error {
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("writable by group or others (mode %v)", fi.Mode().Perm())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("owned by uid %d, not by this process (uid %d)", st.Uid, os.Geteuid())
	}
	return nil
}

// entry returns the directory of the module whose instrumented bytes are
// wasm, and marks it used now (the LRU order is the directories' mtimes,
// which every server sharing the cache sees).
func (d *diskCache) entry(wasm []byte) string {
	sum := sha256.Sum256(wasm)
	path := filepath.Join(d.dir, entryPrefix+hex.EncodeToString(sum[:16]))
	now := time.Now()
	_ = os.Chtimes(path, now, now) // absent until wazero writes it
	return path
}

// prune removes the least recently used entries, but keep, until the
// entries together take at most maxBytes.
func (d *diskCache) prune(keep string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ents, err := os.ReadDir(d.dir)
	if err != nil {
		return
	}
	type entry struct {
		path string
		used time.Time
		size int64
	}
	var all []entry
	var total int64
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), entryPrefix) {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // evicted by another server meanwhile
		}
		p := filepath.Join(d.dir, e.Name())
		size := dirSize(p)
		all = append(all, entry{p, fi.ModTime(), size})
		total += size
	}
	slices.SortFunc(all, func(a, b entry) int { return cmp.Or(a.used.Compare(b.used), strings.Compare(a.path, b.path)) })
	for _, e := range all {
		if total <= d.maxBytes {
			return
		}
		if e.path == keep {
			continue
		}
		if os.RemoveAll(e.path) == nil {
			total -= e.size
		}
	}
}

// dirSize is the size of the regular files under p.
func dirSize(p string) int64 {
	var n int64
	_ = filepath.WalkDir(p, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// cacheFault reports whether a compile failed because of the disk cache
// (an entry wazero cannot read, or one it cannot write) rather than
// because of the module.
func cacheFault(err error) bool {
	var pe *fs.PathError
	var le *os.LinkError
	return strings.Contains(err.Error(), "compilationcache") || errors.As(err, &pe) || errors.As(err, &le)
}
