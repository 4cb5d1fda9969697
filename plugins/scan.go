package plugins

import (
	"context"
	"crypto/sha256"
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
// for an invalid config, a done context, or a directory that does not exist
// ([ErrNoDir]), is not a directory ([ErrNotDir]) or cannot be read
// ([ErrUnreadable]); it then names the directory. A file that cannot be
// taken as a module is a [Problem] in the snapshot.
func Scan(ctx context.Context, cfg Config) (*Snapshot, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	sc := newScanner(cfg)
	sc.settle = 0
	ls, err := sc.list(resolveDir(cfg.Dir))
	if err != nil {
		return nil, dirError(cfg.Dir, err)
	}
	r, err := sc.read(ctx, ls, nil)
	if err != nil {
		return nil, err
	}
	r.reportUnsettled()
	return r.snap, nil
}

// dirError is the error of Scan or NewWatcher for a directory that cannot
// be read: the directory and why, like a [Problem] of the directory.
func dirError(dir string, why error) error {
	return fmt.Errorf("%s: %w", dir, why)
}

// scanner turns the directory into snapshots, in two steps: [scanner.list]
// reads the directory's candidate names, [scanner.read] digests the files.
// It remembers the digest of each file it read, keyed by name, so that a
// rescan reads only files whose identity, size or modification time
// changed. Not safe for concurrent use: a Watcher's owner goroutine is its
// only user.
type scanner struct {
	cfg    Config
	settle time.Duration // minimum age of a file's mtime to load it
	now    func() time.Time
	cache  map[string]cacheEntry // by base name; rebuilt each scan, so bounded by MaxModules
	buf    []byte
	reads  int // files hashed, for tests
}

// cacheEntry is a file's digest and the stat it was computed for.
type cacheEntry struct {
	fi       fs.FileInfo
	digest   string
	hashedAt time.Time
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

// dirState is what the configured directory resolves to at one moment. A
// Watcher's rescan sets its watches and lists the files from the same
// dirState, so it resolves the directory once.
type dirState struct {
	path string      // after following symbolic links
	fi   fs.FileInfo // its identity, to notice a directory deleted and created again
	err  error       // why it is not a directory (path and fi are then zero)
}

// resolveDir follows dir's symbolic links to the directory it names now.
func resolveDir(dir string) dirState {
	path, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return dirState{err: dirReason(err)}
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return dirState{err: dirReason(err)}
	case !fi.IsDir() && path != dir:
		return dirState{err: fmt.Errorf("%w: it resolves to %s", ErrNotDir, path)}
	case !fi.IsDir():
		return dirState{err: ErrNotDir}
	}
	return dirState{path: path, fi: fi}
}

// dirReason says why the directory cannot be read, from the error of an
// operation on it: an error wrapping ErrNoDir, ErrNotDir or ErrUnreadable.
func dirReason(err error) error {
	switch {
	case errors.Is(err, ErrNotDir):
		return err
	case errors.Is(err, fs.ErrNotExist):
		return ErrNoDir
	}
	return fmt.Errorf("%w: %v", ErrUnreadable, err)
}

// listing is the candidate files of the directory, as one scan reads them.
type listing struct {
	dir   string   // the resolved directory
	names []string // the first MaxModules candidate file names, sorted
	extra int      // how many candidates beyond MaxModules were left out
}

// list reads the names of the candidate files of the directory d. Its error
// says why the directory cannot be read (it wraps ErrNoDir, ErrNotDir or
// ErrUnreadable); the scanner then forgets its digests, so that the files
// of a directory that comes back are read afresh.
func (sc *scanner) list(d dirState) (listing, error) {
	if d.err != nil {
		sc.cache = map[string]cacheEntry{}
		return listing{}, d.err
	}
	names, extra, err := sc.readNames(d.path)
	if err != nil {
		sc.cache = map[string]cacheEntry{}
		return listing{}, dirReason(err)
	}
	return listing{dir: d.path, names: names, extra: extra}, nil
}

// readNames returns the first MaxModules candidate file names of dir in name
// order and how many more candidates there were. Memory stays bounded by
// 2×MaxModules names however large the directory.
func (sc *scanner) readNames(dir string) ([]string, int, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, 0, err
	}
	defer d.Close()
	if fi, err := d.Stat(); err != nil {
		return nil, 0, err
	} else if !fi.IsDir() {
		return nil, 0, ErrNotDir // replaced since it was resolved
	}
	limit := sc.cfg.MaxModules
	var names []string
	total := 0
	for {
		ents, err := d.ReadDir(readDirBatch)
		for _, e := range ents {
			if e.IsDir() || !isCandidate(e.Name()) {
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

// scanResult is one scan: its snapshot, and the files it left out because
// they are still being written. Each of those keeps in the snapshot what
// the previous snapshot said about it.
type scanResult struct {
	snap      *Snapshot
	unsettled []unsettledFile
}

// unsettledFile is a file still being written, to be looked at again.
type unsettledFile struct {
	name, path string
	retryAt    time.Time
}

// read digests the listed files into a snapshot. A file still being
// written keeps what prev said about it (nothing when prev is nil) and is
// listed in the result's unsettled files. The error is only the context's.
func (sc *scanner) read(ctx context.Context, ls listing, prev *Snapshot) (scanResult, error) {
	r := scanResult{snap: &Snapshot{resolved: ls.dir, source: sc.cfg.Source}}
	cache := make(map[string]cacheEntry, len(ls.names))
	for _, base := range ls.names {
		if err := ctx.Err(); err != nil {
			return scanResult{}, err
		}
		path := filepath.Join(ls.dir, base)
		name, err := moduleName(base)
		if err != nil {
			r.snap.problems = append(r.snap.problems, Problem{Name: base, Path: path, Err: err})
			continue
		}
		ce, err := sc.digestFile(base, path)
		var unsettled unsettledError
		switch {
		case err == nil:
			r.snap.modules = append(r.snap.modules, Module{Name: name, Path: path, Digest: ce.digest, Size: ce.fi.Size(), ModTime: ce.fi.ModTime(), Source: sc.cfg.Source})
			cache[base] = ce
		case errors.Is(err, errNotModule):
			// Not a module file after all: left out, with no problem.
		case errors.As(err, &unsettled):
			r.unsettled = append(r.unsettled, unsettledFile{name: name, path: path, retryAt: unsettled.retryAt})
			r.snap.keep(prev, name)
			sc.cfg.Logger.Debug("plugins: module file still being written; looking again later", "path", path)
		default:
			r.snap.problems = append(r.snap.problems, Problem{Name: name, Path: path, Err: err})
		}
	}
	if ls.extra > 0 {
		r.snap.problems = append(r.snap.problems, Problem{Path: sc.cfg.Dir,
			Err: fmt.Errorf("%w: %d more .wasm files beyond the limit of %d were ignored", ErrTooMany, ls.extra, sc.cfg.MaxModules)})
	}
	sc.cache = cache
	// The names are sorted, so are the modules.
	sortProblems(r.snap.problems)
	return r, nil
}

// reportUnsettled makes each file still being written an [ErrUnstable]
// problem of the snapshot, for a snapshot that must not leave a file out
// silently: Scan's, and a Watcher's first.
func (r scanResult) reportUnsettled() {
	for _, u := range r.unsettled {
		r.snap.problems = append(r.snap.problems, Problem{Name: u.name, Path: u.path, Err: ErrUnstable})
	}
	sortProblems(r.snap.problems)
}

// nextLook returns when the earliest unsettled file is worth looking at
// again; false when there is none.
func (r scanResult) nextLook() (time.Time, bool) {
	var next time.Time
	for _, u := range r.unsettled {
		if next.IsZero() || u.retryAt.Before(next) {
			next = u.retryAt
		}
	}
	return next, !next.IsZero()
}

// errNotModule is a listed name that is no module file after all: it
// vanished since it was listed, is a dangling symbolic link, or is a
// directory. It is left out, and is no problem.
var errNotModule = errors.New("not a module file")

// unsettledError is a file that may still be being written: it was
// modified less than the settle time ago, or changed while it was read. It
// is looked at again at retryAt.
type unsettledError struct{ retryAt time.Time }

func (unsettledError) Error() string { return ErrUnstable.Error() }

// digestFile returns the digest of one candidate file, reusing the
// previous scan's when the file did not change. Its error is errNotModule,
// an unsettledError, or a problem wrapping one of the package's sentinels.
func (sc *scanner) digestFile(base, path string) (cacheEntry, error) {
	now := sc.now()
	st, err := sc.statFile(path)
	if err != nil {
		return cacheEntry{}, err
	}
	if err := sc.checkSettled(st.ModTime(), now); err != nil {
		return cacheEntry{}, err
	}
	if c, ok := sc.cached(base, st); ok {
		return c, nil
	}
	digest, err := sc.hashFile(path, st, now)
	if err != nil {
		return cacheEntry{}, err
	}
	return cacheEntry{fi: st, digest: digest, hashedAt: now}, nil
}

// statFile stats a candidate file and refuses what cannot be a module: a
// file that is not regular or is too large.
func (sc *scanner) statFile(path string) (fs.FileInfo, error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, errNotModule // gone, or a dangling symbolic link
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrUnreadable, err)
	case st.IsDir():
		return nil, errNotModule // subdirectories are ignored
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("%w: mode %v", ErrNotRegular, st.Mode().Type())
	case st.Size() > sc.cfg.MaxModuleBytes:
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, st.Size(), sc.cfg.MaxModuleBytes)
	}
	return st, nil
}

// checkSettled refuses a file modified less than the settle time before
// now: it may still be being written. A modification time more than a
// second in the future is clock skew, which waiting would not cure.
func (sc *scanner) checkSettled(mt, now time.Time) error {
	if age := now.Sub(mt); sc.settle > 0 && age < sc.settle && age > -time.Second {
		return unsettledError{retryAt: mt.Add(sc.settle)}
	}
	return nil
}

// cached returns the previous scan's digest of a file when it can be
// trusted: the file's stat is unchanged, and its modification time was
// more than racyMargin old when it was hashed.
func (sc *scanner) cached(base string, st fs.FileInfo) (cacheEntry, bool) {
	c, ok := sc.cache[base]
	if !ok || !sameStat(c.fi, st) || !st.ModTime().Before(c.hashedAt.Add(-racyMargin)) {
		return cacheEntry{}, false
	}
	return c, true
}

// hashFile reads and digests the file that st describes. When the file
// turns out to be another one, or is written, truncated or replaced while
// it is read (two stats and the bytes read disagree), it returns an
// unsettledError to look again after Debounce.
func (sc *scanner) hashFile(path string, st fs.FileInfo, now time.Time) (string, error) {
	changed := unsettledError{retryAt: now.Add(sc.cfg.Debounce)}
	f, err := openModule(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", errNotModule
	case err != nil:
		return "", fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	defer f.Close()
	opened, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	if !sameStat(st, opened) {
		return "", changed // replaced between stat and open
	}
	sc.reads++
	h := sha256.New()
	n, err := io.CopyBuffer(h, io.LimitReader(f, sc.cfg.MaxModuleBytes+1), sc.buf)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	after, err := os.Stat(path)
	if err != nil || n != st.Size() || !sameStat(st, after) {
		return "", changed
	}
	return formatDigest(h.Sum(nil)), nil
}

// sameStat reports whether two stats are of the same file, unchanged.
func sameStat(a, b fs.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime()) && a.Mode() == b.Mode()
}

// sortProblems puts file problems in name order and the directory's own
// problems (no Name) last, keeping their order.
func sortProblems(ps []Problem) {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		switch {
		case a.Name == "" && b.Name != "":
			return 1
		case a.Name != "" && b.Name == "":
			return -1
		}
		return strings.Compare(a.Name, b.Name)
	})
}
