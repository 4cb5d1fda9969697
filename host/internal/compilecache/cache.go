package compilecache

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Cache is one compile cache directory, its key and its bound. It is safe
// for concurrent use, and by several servers at once (see the package doc).
type Cache struct {
	dir      string
	maxBytes int64
	key      []byte
	stageDir string // where compiles' private directories are made
	log      *slog.Logger
	mu       sync.Mutex // one prune at a time in this process

	restored, refused, stored atomic.Int64 // see Counts
}

// Counts is what the compiles of one Cache found: entries read and given
// to wazero, entries refused, and compiles that wrote an entry (wazero
// compiled the module rather than read it).
type Counts struct{ Restored, Refused, Stored int64 }

// Entries counts the entries the directory holds now (of this server's or
// another's: their keys are checked when they are read).
func (d *Cache) Entries() int {
	ents, err := os.ReadDir(d.dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), EntryPrefix) {
			n++
		}
	}
	return n
}

// Counts returns what the compiles found so far.
func (d *Cache) Counts() Counts {
	return Counts{d.restored.Load(), d.refused.Load(), d.stored.Load()}
}

// EntryPrefix names the cache's entries, so that a prune never removes a
// file it did not make, whatever else the directory holds.
const EntryPrefix = "m-"

// Open creates dir if needed, checks that only this user can
// write it (the cache holds native code the server runs), and reads or
// creates the key in keyFile.
func Open(dir string, maxMiB int, keyFile string, log *slog.Logger) (*Cache, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("compile cache %q: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("compile cache: %w", err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("compile cache: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("compile cache %s is not a directory", abs)
	}
	if err := ownedPrivately(fi); err != nil {
		return nil, fmt.Errorf("compile cache %s: %w (it holds native code the server runs)", abs, err)
	}
	key, err := loadCacheKey(keyFile, abs, fi)
	if err != nil {
		return nil, fmt.Errorf("compile cache key %s: %w", keyFile, err)
	}
	stage := os.TempDir()
	if err := safeStageDir(stage); err != nil {
		return nil, fmt.Errorf("compile cache: the temporary directory %s: %w", stage, err)
	}
	return &Cache{dir: abs, maxBytes: int64(maxMiB) << 20, key: key, stageDir: stage, log: log}, nil
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

// safeStageDir refuses a directory where another user could rename or
// replace a compile's private directory: one others may write, unless it
// is sticky (as /tmp is).
func safeStageDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return errors.New("not a directory")
	}
	if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
		return fmt.Errorf("writable by group or others and not sticky (mode %v)", fi.Mode())
	}
	return nil
}

// Stage is one compile's use of the cache: the private directory wazero's
// cache is given, what was restored into it, and where its entry lives.
type Stage struct {
	d        *Cache
	module   string // for the log
	entry    string // the entry's path in the shared directory
	digest   [sha256.Size]byte
	max      int64                  // bound of the entry (maxEntryBytes)
	dir      string                 // the private directory
	restored map[string]fs.FileInfo // the files written from the entry, by name
}

// Stage makes the private directory of one compile of the module named
// name whose instrumented bytes are wasm, and writes there the files of the
// module's entry, if it has one that passes every check. An entry that
// does not is logged, removed, and the module compiled again (the stage
// starts empty). It returns nil, having logged why, only when the private
// directory cannot be made or written: then the module is compiled without
// the disk.
func (d *Cache) Stage(name string, wasm []byte) *Stage {
	s := &Stage{d: d, module: name, digest: sha256.Sum256(wasm), max: maxEntryBytes(len(wasm))}
	s.entry = filepath.Join(d.dir, EntryPrefix+hex.EncodeToString(s.digest[:16]))
	dir, err := os.MkdirTemp(d.stageDir, "wasmtask-compile-") // mode 0700
	if err != nil {
		d.log.Warn("compile cache: not used: "+err.Error(), "module", name)
		return nil
	}
	s.dir = dir
	files, err := d.readEntry(s)
	switch {
	case errors.Is(err, errNoEntry):
		return s
	case err != nil:
		d.refuse(s, err)
		return s
	}
	if err := s.restore(files); err != nil {
		// The private directory is this process's own: a failure to
		// write it is the disk's, not the entry's.
		s.Close()
		d.log.Warn("compile cache: not used: "+err.Error(), "module", name)
		return nil
	}
	d.restored.Add(1)
	return s
}

// readEntry reads and authenticates s's entry.
func (d *Cache) readEntry(s *Stage) ([]entryFile, error) {
	data, err := readEntryFile(s.entry, s.max)
	if err != nil {
		return nil, err
	}
	return openEntry(d.key, s.digest, data)
}

// refuse logs an entry refused for why and removes it, so that the
// compile's own entry replaces it.
func (d *Cache) refuse(s *Stage, why error) {
	d.refused.Add(1)
	d.log.Warn("compile cache: entry refused, compiling the module again: "+why.Error(),
		"module", s.module, "entry", s.entry)
	removeEntry(s.entry)
}

// removeEntry removes what is at p, whatever it is, without following a
// link.
func removeEntry(p string) {
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		_ = os.RemoveAll(p) // a directory that is not empty
	}
}

// restore writes files into the private directory, through an os.Root so
// that no name can lead out of it.
func (s *Stage) restore(files []entryFile) error {
	root, err := os.OpenRoot(s.dir)
	if err != nil {
		return err
	}
	defer root.Close()
	s.restored = make(map[string]fs.FileInfo, len(files))
	for _, f := range files {
		if dir := filepath.Dir(filepath.FromSlash(f.name)); dir != "." {
			if err := root.MkdirAll(dir, 0o700); err != nil {
				return err
			}
		}
		w, err := root.OpenFile(filepath.FromSlash(f.name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		_, err = w.Write(f.data)
		fi, serr := w.Stat()
		if err := errors.Join(err, serr, w.Close()); err != nil {
			return err
		}
		s.restored[f.name] = fi
	}
	return nil
}

// Publish runs after a successful compile: when wazero wrote files of its
// own (it compiled the module rather than read it), they become the
// module's entry in the shared directory, replacing what was there; then
// the cache is pruned. A failure costs only the next start a compile: it
// is logged, never returned.
func (s *Stage) Publish() {
	d := s.d
	names, err := s.written()
	if err == nil && len(names) == 0 {
		return // read from the entry
	}
	if err == nil {
		err = s.write(names)
	}
	if err != nil {
		d.log.Warn("compile cache: entry not stored: "+err.Error(), "module", s.module, "entry", s.entry)
		return
	}
	d.stored.Add(1)
	d.log.Debug("compile cache: entry stored", "module", s.module, "entry", s.entry)
	if n := d.prune(s.entry); n > 0 {
		d.log.Info(fmt.Sprintf("compile cache: removed %d entries that were not regular files of this user (an older version's directories, or planted)", n), "cacheDir", d.dir)
	}
}

// written returns the names of the regular files in the private directory
// that are not the entry's as restored: those wazero wrote (it writes a
// file by rename, so one it rewrote, having found the entry stale, is
// another file).
func (s *Stage) written() ([]string, error) {
	var names []string
	err := filepath.WalkDir(s.dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(s.dir, p)
		if err != nil {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if old, ok := s.restored[name]; !ok || !os.SameFile(old, fi) {
			names = append(names, name)
		}
		return nil
	})
	return names, err
}

// write publishes the named files of the private directory as s's entry:
// encoded and authenticated into a temporary file of the shared directory,
// renamed over the entry.
func (s *Stage) write(names []string) error {
	if len(names) > maxEntryFiles {
		return fmt.Errorf("wazero wrote %d files, more than the %d an entry holds", len(names), maxEntryFiles)
	}
	root, err := os.OpenRoot(s.dir)
	if err != nil {
		return err
	}
	defer root.Close()
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	total := int64(entryHeadSize + entryTagSize)
	for _, n := range names {
		f, err := root.Open(filepath.FromSlash(n))
		if err != nil {
			return err
		}
		files = append(files, f)
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		total += 2 + int64(len(n)) + 8 + fi.Size()
	}
	if total > s.max {
		return fmt.Errorf("it would have %d bytes, more than the %d an entry of this module may have", total, s.max)
	}
	tmp, err := os.CreateTemp(s.d.dir, filepath.Base(s.entry)+".tmp-*") // mode 0600
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	w := newEntryWriter(tmp, s.d.key, s.digest, len(names))
	for i, n := range names {
		fi, err := files[i].Stat()
		if err != nil {
			return err
		}
		w.add(n, fi.Size(), files[i])
	}
	if err := errors.Join(w.close(), tmp.Close()); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), s.entry); err != nil {
		// Something that is not a file holds the name (a directory):
		// clear it, once.
		removeEntry(s.entry)
		if err := os.Rename(tmp.Name(), s.entry); err != nil {
			return err
		}
	}
	ok = true
	return nil
}

// Drop removes s's entry: wazero refused what it held (its compile failed
// with a [Fault]), although it passed every check.
func (s *Stage) Drop() {
	if len(s.restored) > 0 {
		s.d.log.Warn("compile cache: wazero could not read an entry, compiling the module again", "module", s.module, "entry", s.entry)
		removeEntry(s.entry)
	}
}

// Dir is the private directory to give wazero's file cache
// (wazero.NewCompilationCacheWithDir) for this compile.
func (s *Stage) Dir() string { return s.dir }

// Close removes the private directory.
func (s *Stage) Close() { _ = os.RemoveAll(s.dir) }

// prune removes the least recently used entries, but keep, until the
// entries together take at most maxBytes, and removes whatever holds an
// entry's name without being a regular file of this user (whose size and
// mtime would otherwise count, and could make it evict real entries). It
// returns how many of the latter it removed.
func (d *Cache) prune(keep string) (odd int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ents, err := os.ReadDir(d.dir)
	if err != nil {
		return 0
	}
	type entry struct {
		path string
		used time.Time
		size int64
	}
	var all []entry
	var total int64
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), EntryPrefix) {
			continue
		}
		p := filepath.Join(d.dir, e.Name())
		fi, err := e.Info()
		if err != nil {
			continue // evicted by another server meanwhile
		}
		if !fi.Mode().IsRegular() || !ownFile(fi) {
			removeEntry(p)
			odd++
			continue
		}
		all = append(all, entry{p, fi.ModTime(), fi.Size()})
		total += fi.Size()
	}
	slices.SortFunc(all, func(a, b entry) int { return cmp.Or(a.used.Compare(b.used), strings.Compare(a.path, b.path)) })
	for _, e := range all {
		if total <= d.maxBytes {
			break
		}
		if e.path == keep {
			continue
		}
		if os.Remove(e.path) == nil {
			total -= e.size
		}
	}
	return odd
}

// Fault reports whether a compile failed because of the disk cache
// (an entry wazero cannot read, or one it cannot write) rather than
// because of the module.
func Fault(err error) bool {
	var pe *fs.PathError
	var le *os.LinkError
	return strings.Contains(err.Error(), "compilationcache") || errors.As(err, &pe) || errors.As(err, &le)
}
