package plugins

import (
	"bytes"
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
	Digest  string    // of the content, in [Digest]'s form: "sha256:" and 64 hex digits
	Size    int64     // bytes
	ModTime time.Time // modification time when read
	Source  string    // where it was found: [Config].Source of the scan

	fsys fs.FS // set by ScanFS: the bytes come from here, Path is the name in it
}

// readBytes reads the module's content again from Path and returns it only
// if it is still the content the snapshot saw: same size and same digest.
// Otherwise it returns an error wrapping [ErrDigestMismatch] (the file was
// changed after the scan; a newer snapshot follows) or [ErrUnreadable].
//
// A snapshot keeps digests, not bytes, so that holding snapshots costs no
// memory per module; [Build] reads the bytes of the modules it has to load
// and nothing else.
func (m Module) readBytes() ([]byte, error) {
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
	if err := m.checkDigest(b); err != nil {
		return nil, err
	}
	return b, nil
}

// checkDigest reports whether b is the content the snapshot saw.
func (m Module) checkDigest(b []byte) error {
	if d := Digest(b); d != m.Digest {
		return fmt.Errorf("%w: %s: digest %s, snapshot saw %s", ErrDigestMismatch, m.Name, shortDigest(d), shortDigest(m.Digest))
	}
	return nil
}

// Problem is a file (or the directory itself) that a scan could not turn into
// a [Module]: too large, a bad name, unreadable, not a regular file, still
// being written, one too many, or the directory gone or not watched. Err
// wraps one of the package's sentinels.
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
	resolved string // the directory read, after following symbolic links; "" when it could not be read
	source   string // Config.Source of the scan
	seq      uint64 // numbers the snapshots one Watcher delivers, from 1; 0 from Scan
	modules  []Module
	problems []Problem
}

// Seq numbers the snapshots one [Watcher] delivers, from 1; it is 0 for a
// snapshot made by [Scan] or [ScanFS].
func (s *Snapshot) Seq() uint64 {
	if s == nil {
		return 0
	}
	return s.seq
}

// Source returns the [Config].Source of the scan that made the snapshot:
// every module of it has that Source.
func (s *Snapshot) Source() string {
	if s == nil {
		return ""
	}
	return s.source
}

// Modules returns the modules, sorted by name. The slice is a copy.
func (s *Snapshot) Modules() []Module {
	if s == nil {
		return nil
	}
	return slices.Clone(s.modules)
}

// Problems returns the files that could not be taken as modules, in name
// order, then the problems of the directory itself. The slice is a copy.
func (s *Snapshot) Problems() []Problem {
	if s == nil {
		return nil
	}
	return slices.Clone(s.problems)
}

// module returns the module called name.
func (s *Snapshot) module(name string) (Module, bool) {
	if s == nil {
		return Module{}, false
	}
	i, ok := slices.BinarySearchFunc(s.modules, name, func(m Module, n string) int { return strings.Compare(m.Name, n) })
	if !ok {
		return Module{}, false
	}
	return s.modules[i], true
}

// keep copies into s, which is being built, what prev said about the module
// called name: its entry, or else its problems. It is for a file still
// being written, so that such a file changes nothing until it settles.
func (s *Snapshot) keep(prev *Snapshot, name string) {
	if m, ok := prev.module(name); ok {
		s.modules = append(s.modules, m)
		return
	}
	if prev == nil {
		return
	}
	for _, p := range prev.problems {
		if p.Name == name {
			s.problems = append(s.problems, p)
		}
	}
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

// openModule opens a module file for reading without blocking, even if the
// path was replaced by a FIFO after it was listed.
func openModule(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|openFlags, 0)
}
