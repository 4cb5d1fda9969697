package plugins

import (
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// ScanFS takes a snapshot of the modules at the root of fsys, with the same
// name rules and limits as a directory scan (cfg.Dir is ignored). It is for
// tool sets that never change while the server runs, such as modules embedded
// in the binary: there is nothing to watch and no file can be half-written.
// Module.Path is the file's name in fsys; Module.Source is cfg.Source.
func ScanFS(fsys fs.FS, cfg Config) (*Snapshot, error) {
	if cfg.Dir == "" {
		cfg.Dir = "."
	}
	source := cfg.Source
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	cfg.Source = source
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	s := &Snapshot{source: cfg.Source}
	for _, e := range entries {
		base := e.Name()
		if e.IsDir() || !isCandidate(base) {
			continue
		}
		name, err := moduleName(base)
		if err != nil {
			s.problems = append(s.problems, Problem{Name: base, Path: base, Err: err})
			continue
		}
		if len(s.modules) == cfg.MaxModules {
			s.problems = append(s.problems, Problem{Name: base, Path: base, Err: fmt.Errorf("%w: more than %d modules", ErrTooMany, cfg.MaxModules)})
			continue
		}
		info, err := e.Info()
		if err != nil {
			s.problems = append(s.problems, Problem{Name: name, Path: base, Err: fmt.Errorf("%w: %v", ErrUnreadable, err)})
			continue
		}
		if info.Size() > cfg.MaxModuleBytes {
			s.problems = append(s.problems, Problem{Name: name, Path: base, Err: fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, info.Size(), cfg.MaxModuleBytes)})
			continue
		}
		b, err := fs.ReadFile(fsys, base)
		if err != nil {
			s.problems = append(s.problems, Problem{Name: name, Path: base, Err: fmt.Errorf("%w: %v", ErrUnreadable, err)})
			continue
		}
		s.modules = append(s.modules, Module{Name: name, Path: base, Digest: Digest(b), Size: int64(len(b)), ModTime: info.ModTime(), Source: cfg.Source, fsys: fsys})
	}
	slices.SortFunc(s.modules, func(a, b Module) int { return strings.Compare(a.Name, b.Name) })
	sortProblems(s.problems)
	return s, nil
}

// readFS is readBytes for a module found by ScanFS.
func (m Module) readFS() ([]byte, error) {
	b, err := fs.ReadFile(m.fsys, m.Path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnreadable, m.Name, err)
	}
	if err := m.checkDigest(b); err != nil {
		return nil, err
	}
	return b, nil
}
