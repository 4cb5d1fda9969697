package plugins

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// ErrUnstable is reported by [Scan] for a file that changed while it was read.
// A [Watcher] never reports it: it keeps the previous version and looks again.
var ErrUnstable = errors.New("plugins: module file changed while it was read")

// racyMargin is how much older than the moment its digest was computed a
// file's modification time must be for the digest to be reused without
// reading the file again. File systems keep modification times with a
// granularity from a few milliseconds (Linux's coarse clock) to 2 seconds
// (FAT); a file rewritten with the same size within that granularity keeps
// its modification time, and only a fresh read tells it apart.
const racyMargin = 2 * time.Second

// readDirBatch is how many directory entries are read at a time.
const readDirBatch = 256

// Scan reads the module directory once and returns its snapshot. It follows
// the same rules as a [Watcher] but does not wait for files being written:
// such a file is reported as an [ErrUnstable] problem. The error is non-nil
// only for an invalid config or a done context; everything else is a
// [Problem] in the snapshot.
func Scan(ctx context.Context, cfg Config) (*Snapshot, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	sc := newScanner(cfg)
	sc.settle = 0
	r, err := sc.scan(ctx, nil)
	if err != nil {
		return nil, err
	}
	for _, u := range r.unstable {
		r.snap.problems = append(r.snap.problems, Problem{Name: u.name, Path: u.path, Err: ErrUnstable})
	}
	sortProblems(r.snap.problems)
	return r.snap, nil
}

// scanner turns the directory into snapshots. It remembers the digest of
// each file it read, keyed by name, so that a rescan reads only files whose
// identity, size or modification time changed. Not safe for concurrent use:
// a Watcher's owner goroutine is its only user.
type scanner struct {
	cfg    Config
	settle time.Duration // minimum age of a file's mtime to load it
	now    func() time.Time
	cache  map[string]cacheEntry // by base name; rebuilt each scan, so bounded by MaxModules
	buf    []byte
	reads  int // files hashed, for tests
}

type cacheEntry struct {
	fi       fs.FileInfo
	digest   string
	hashedAt time.Time
}

type unstableFile struct {
	name, path string
	retryAt    time.Time // when it is worth looking again
}

type scanResult struct {
	snap     *Snapshot
	unstable []unstableFile
}

func newScanner(cfg Config) *scanner {
	return &scanner{
		cfg:    cfg,
		settle: cfg.Debounce,
		now:    time.Now,
		cache:  map[string]cacheEntry{},
		buf:    make([]byte, 64<<10),
	}
}

// scan reads the directory. A file that is still being written keeps its
// entry from prev (if any) and is listed in unstable.
func (sc *scanner) scan(ctx context.Context, prev *Snapshot) (scanResult, error) {
	snap := &Snapshot{dir: sc.cfg.Dir}
	var res scanResult
	res.snap = snap
	defer func() { snap.taken = sc.now() }()

	resolved, err := filepath.EvalSymlinks(sc.cfg.Dir)
	if err != nil {
		sc.cache = map[string]cacheEntry{}
		if errors.Is(err, fs.ErrNotExist) {
			snap.problems = append(snap.problems, Problem{Path: sc.cfg.Dir, Err: ErrNoDir})
		} else {
			snap.problems = append(snap.problems, Problem{Path: sc.cfg.Dir, Err: fmt.Errorf("%w: %v", ErrUnreadable, err)})
		}
		return res, nil
	}
	names, extra, err := sc.list(resolved)
	if err != nil {
		sc.cache = map[string]cacheEntry{}
		perr := fmt.Errorf("%w: %v", ErrUnreadable, err)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			perr = ErrNoDir
		case errors.Is(err, ErrNotDir):
			perr = err
		}
		snap.problems = append(snap.problems, Problem{Path: sc.cfg.Dir, Err: perr})
		return res, nil
	}
	snap.resolved = resolved

	cache := make(map[string]cacheEntry, len(names))
	for _, base := range names {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		path := filepath.Join(resolved, base)
		name, err := ModuleName(base)
		if err != nil {
			snap.problems = append(snap.problems, Problem{Name: base, Path: path, Err: err})
			continue
		}
		m, ce, p, unstable := sc.readOne(name, base, path)
		switch {
		case p != nil:
			snap.problems = append(snap.problems, *p)
		case unstable != nil:
			res.unstable = append(res.unstable, *unstable)
			if old, ok := prev.Module(name); ok {
				snap.modules = append(snap.modules, old)
			}
			sc.cfg.Logger.Debug("plugins: module file still being written; looking again later", "path", path)
		case m != nil:
			snap.modules = append(snap.modules, *m)
			cache[base] = ce
		}
		// A file that vanished between listing and reading is simply absent.
	}
	if extra > 0 {
		snap.problems = append(snap.problems, Problem{Path: sc.cfg.Dir,
			Err: fmt.Errorf("%w: %d more .wasm files beyond the limit of %d were ignored", ErrTooMany, extra, sc.cfg.MaxModules)})
	}
	sc.cache = cache
	// names is sorted, so are modules; problems are in name order with the
	// directory-level one last.
	return res, nil
}

// list returns the first MaxModules candidate file names in name order and
// how many more candidates there were. Memory stays bounded by 2×MaxModules
// names however large the directory.
func (sc *scanner) list(dir string) ([]string, int, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, 0, err
	}
	defer d.Close()
	if fi, err := d.Stat(); err != nil {
		return nil, 0, err
	} else if !fi.IsDir() {
		return nil, 0, fmt.Errorf("%w: %s", ErrNotDir, dir)
	}
	limit := sc.cfg.MaxModules
	var names []string
	total := 0
	for {
		ents, err := d.ReadDir(readDirBatch)
		for _, e := range ents {
			if e.IsDir() || !IsCandidate(e.Name()) {
				continue
			}
			total++
			names = append(names, e.Name())
			if len(names) >= 2*limit {
				slices.Sort(names)
				names = names[:limit]
			}
		}
		if err == io.EOF || (err == nil && len(ents) == 0) {
			break
		}
		if err != nil {
			return nil, 0, err
		}
	}
	slices.Sort(names)
	if len(names) > limit {
		names = names[:limit]
	}
	return slices.Clip(names), total - len(names), nil
}

// readOne stats, reads and digests one file. Exactly one of the results is
// set, or none when the file vanished.
func (sc *scanner) readOne(name, base, path string) (*Module, cacheEntry, *Problem, *unstableFile) {
	problem := func(err error) (*Module, cacheEntry, *Problem, *unstableFile) {
		return nil, cacheEntry{}, &Problem{Name: name, Path: path, Err: err}, nil
	}
	now := sc.now()
	st0, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, cacheEntry{}, nil, nil // gone (or a dangling symlink)
	case err != nil:
		return problem(fmt.Errorf("%w: %v", ErrUnreadable, err))
	case st0.IsDir():
		return nil, cacheEntry{}, nil, nil // subdirectories are ignored
	case !st0.Mode().IsRegular():
		return problem(fmt.Errorf("%w: mode %v", ErrNotRegular, st0.Mode().Type()))
	case st0.Size() > sc.cfg.MaxModuleBytes:
		return problem(fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, st0.Size(), sc.cfg.MaxModuleBytes))
	}
	mt := st0.ModTime()
	if age := now.Sub(mt); sc.settle > 0 && age < sc.settle && age > -time.Second {
		// Written less than the debounce interval ago: maybe still being
		// written. (A modification time more than a second in the future
		// is clock skew, which waiting would not cure.)
		return nil, cacheEntry{}, nil, &unstableFile{name: name, path: path, retryAt: mt.Add(sc.settle)}
	}
	if c, ok := sc.cache[base]; ok && sameStat(c.fi, st0) && mt.Before(c.hashedAt.Add(-racyMargin)) {
		return &Module{Name: name, Path: path, Digest: c.digest, Size: st0.Size(), ModTime: mt}, c, nil, nil
	}

	unstable := &unstableFile{name: name, path: path, retryAt: now.Add(sc.cfg.Debounce)}
	f, err := openModule(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, cacheEntry{}, nil, nil
	case err != nil:
		return problem(fmt.Errorf("%w: %v", ErrUnreadable, err))
	}
	defer f.Close()
	st1, err := f.Stat()
	if err != nil {
		return problem(fmt.Errorf("%w: %v", ErrUnreadable, err))
	}
	if !sameStat(st0, st1) {
		return nil, cacheEntry{}, nil, unstable // replaced between stat and open
	}
	sc.reads++
	h := sha256.New()
	n, err := io.CopyBuffer(h, io.LimitReader(f, sc.cfg.MaxModuleBytes+1), sc.buf)
	if err != nil {
		return problem(fmt.Errorf("%w: %v", ErrUnreadable, err))
	}
	st2, err := os.Stat(path)
	if err != nil || n != st0.Size() || !sameStat(st0, st2) {
		return nil, cacheEntry{}, nil, unstable // written, truncated or replaced while read
	}
	digest := hex.EncodeToString(h.Sum(nil))
	return &Module{Name: name, Path: path, Digest: digest, Size: n, ModTime: mt},
		cacheEntry{fi: st0, digest: digest, hashedAt: now}, nil, nil
}

// sameStat reports whether two stats are of the same file, unchanged.
func sameStat(a, b fs.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime()) && a.Mode() == b.Mode()
}

func sortProblems(ps []Problem) {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		// Directory-level problems (no Name) last, files by name.
		switch {
		case a.Name == "" && b.Name != "":
			return 1
		case a.Name != "" && b.Name == "":
			return -1
		}
		return strings.Compare(a.Name, b.Name)
	})
}
