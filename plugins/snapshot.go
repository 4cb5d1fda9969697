package plugins

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"
)

// Module is one tool module file as it was when a snapshot was taken. It is
// a plain value: copying it is cheap and nothing in it changes.
type Module struct {
	Name    string    // file name without ".wasm"; unique in a snapshot
	Path    string    // absolute path of the file read, in the resolved directory
	Digest  string    // lower-case hex SHA-256 of the content
	Size    int64     // bytes
	ModTime time.Time // modification time when read

	fsys fs.FS // set by ScanFS: the bytes come from here, Path is the name in it
}

// ReadBytes reads the module's content again from Path and returns it only
// if it is still the content the snapshot saw: same size and same digest.
// Otherwise it returns an error wrapping [ErrDigestMismatch] (the file was
// changed after the scan; a newer snapshot follows) or [ErrUnreadable].
//
// A snapshot keeps digests, not bytes, so that holding snapshots costs no
// memory per module; the host reads the bytes of the modules it has to
// compile (see [Diff]) and nothing else.
func (m Module) ReadBytes() ([]byte, error) {
	if m.fsys != nil {
		return m.readFS()
	}
	f, err := openModule(m.Path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnreadable, m.Name, err)
	}
	defer f.Close()
	var buf bytes.Buffer
	buf.Grow(int(m.Size))
	// Read one byte more than expected to notice growth.
	if _, err := io.Copy(&buf, io.LimitReader(f, m.Size+1)); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnreadable, m.Name, err)
	}
	b := buf.Bytes()
	if int64(len(b)) != m.Size {
		return nil, fmt.Errorf("%w: %s: size %d, snapshot saw %d", ErrDigestMismatch, m.Name, len(b), m.Size)
	}
	if d := digestOf(b); d != m.Digest {
		return nil, fmt.Errorf("%w: %s: digest %s, snapshot saw %s", ErrDigestMismatch, m.Name, shortDigest(d), shortDigest(m.Digest))
	}
	return b, nil
}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func shortDigest(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

// Problem is a file (or the directory itself) that a scan could not turn into
// a [Module]: too large, a bad name, unreadable, not a regular file, one too
// many, or the directory missing. Err wraps one of the package's sentinels.
type Problem struct {
	Name string // module name if known, else the file's base name; "" for the directory
	Path string
	Err  error
}

func (p Problem) String() string {
	if p.Path == "" {
		return p.Err.Error()
	}
	return p.Path + ": " + p.Err.Error()
}

// Snapshot is the set of tool modules found in the directory by one scan. It
// is immutable and safe for concurrent use; accessors return copies.
type Snapshot struct {
	dir      string
	resolved string
	seq      uint64
	taken    time.Time
	modules  []Module // sorted by Name
	problems []Problem
}

// Dir returns the configured (absolute) directory.
func (s *Snapshot) Dir() string { return s.dir }

// ResolvedDir returns the directory that was actually read, after following
// symbolic links, or "" when the directory did not exist.
func (s *Snapshot) ResolvedDir() string { return s.resolved }

// Seq numbers the snapshots delivered by one [Watcher], from 1; it is 0 for
// a snapshot made by [Scan].
func (s *Snapshot) Seq() uint64 { return s.seq }

// Time returns when the scan finished.
func (s *Snapshot) Time() time.Time { return s.taken }

// Len returns the number of modules.
func (s *Snapshot) Len() int {
	if s == nil {
		return 0
	}
	return len(s.modules)
}

// Modules returns the modules, sorted by name. The slice is a copy.
func (s *Snapshot) Modules() []Module {
	if s == nil {
		return nil
	}
	return slices.Clone(s.modules)
}

// Module returns the module called name.
func (s *Snapshot) Module(name string) (Module, bool) {
	if s == nil {
		return Module{}, false
	}
	i, ok := slices.BinarySearchFunc(s.modules, name, func(m Module, n string) int { return strings.Compare(m.Name, n) })
	if !ok {
		return Module{}, false
	}
	return s.modules[i], true
}

// Problems returns the files that could not be taken as modules, in name
// order, plus at most one problem about the directory. The slice is a copy.
func (s *Snapshot) Problems() []Problem {
	if s == nil {
		return nil
	}
	return slices.Clone(s.problems)
}

// sameContent reports whether s and o hold the same modules (names, digests
// and paths) and the same problems (by message). Modification times alone do
// not count: touching a file changes nothing a consumer acts on.
func (s *Snapshot) sameContent(o *Snapshot) bool {
	if s == nil || o == nil {
		return s == o
	}
	if s.resolved != o.resolved || len(s.modules) != len(o.modules) || len(s.problems) != len(o.problems) {
		return false
	}
	for i := range s.modules {
		a, b := s.modules[i], o.modules[i]
		if a.Name != b.Name || a.Digest != b.Digest || a.Path != b.Path {
			return false
		}
	}
	for i := range s.problems {
		if s.problems[i].String() != o.problems[i].String() {
			return false
		}
	}
	return true
}

// Diff is what changed from one snapshot to the next, by module name. Each
// list is sorted by name.
type Diff struct {
	Added     []Module // in new only
	Removed   []Module // in old only (the old entry)
	Changed   []Module // in both with a different digest (the new entry)
	Unchanged []Module // in both with the same digest (the new entry)
}

// Empty reports whether nothing was added, removed or changed.
func (d Diff) Empty() bool {
	return len(d.Added) == 0 && len(d.Removed) == 0 && len(d.Changed) == 0
}

// Compare returns the difference from old to new; a nil snapshot is empty.
// A renamed file shows as one removal and one addition with the same
// digest: a host that keys compiled modules by [Module.Digest] reuses it.
func Compare(old, new *Snapshot) Diff {
	var d Diff
	var om, nm []Module
	if old != nil {
		om = old.modules
	}
	if new != nil {
		nm = new.modules
	}
	i, j := 0, 0
	for i < len(om) || j < len(nm) {
		switch {
		case j == len(nm) || (i < len(om) && om[i].Name < nm[j].Name):
			d.Removed = append(d.Removed, om[i])
			i++
		case i == len(om) || nm[j].Name < om[i].Name:
			d.Added = append(d.Added, nm[j])
			j++
		default:
			if om[i].Digest == nm[j].Digest {
				d.Unchanged = append(d.Unchanged, nm[j])
			} else {
				d.Changed = append(d.Changed, nm[j])
			}
			i++
			j++
		}
	}
	return d
}

// openModule opens a module file for reading without blocking, even if the
// path was replaced by a FIFO after it was listed.
func openModule(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|openFlags, 0)
}
