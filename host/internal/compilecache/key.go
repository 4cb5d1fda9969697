package compilecache

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// The compile cache's key authenticates its entries (entry.go). It
// lives in a file outside the cache directory: whoever can write the cache
// but not read the key can plant, copy or alter entries, and the server
// refuses every one of them.
const (
	cacheKeyBytes    = 32   // a key the server creates
	minCacheKeyBytes = 32   // HMAC-SHA256 keys shorter than its output are weaker
	maxCacheKeyBytes = 4096 // a key file is read whole
)

// loadCacheKey returns the key in file, creating the file (mode 0600, in a
// directory created 0700) with a random key when it does not exist. It
// refuses a key file inside cacheDir (whose FileInfo is cache), one that
// is not a regular file, is owned by another user than this process's or
// root, grants group or others any access, or holds fewer than 32 or more
// than 4096 bytes. A link to the file is followed: the checks are of the
// file opened, and its real path must not lead into cacheDir either.
func loadCacheKey(file string, cacheDir string, cache fs.FileInfo) ([]byte, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	if err := outsideDir(abs, cacheDir, cache); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(abs, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if err := createCacheKey(abs); err != nil {
			return nil, fmt.Errorf("creating it: %w", err)
		}
		f, err = os.OpenFile(abs, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
		if err := outsideDir(real, cacheDir, cache); err != nil {
			return nil, fmt.Errorf("it links to %s: %w", real, err)
		}
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if t := fi.Mode().Type(); t != 0 {
		return nil, fmt.Errorf("it is %s, not a regular file", fileKind(t))
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() && st.Uid != 0 {
		return nil, fmt.Errorf("it is owned by uid %d, not by this process (uid %d) or root", st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("group or others may access it (mode %v): it must be private to the server's user (chmod 600)", fi.Mode().Perm())
	}
	if fi.Size() < minCacheKeyBytes || fi.Size() > maxCacheKeyBytes {
		return nil, fmt.Errorf("it has %d bytes, want %d to %d (random bytes, such as `head -c 32 /dev/urandom`)", fi.Size(), minCacheKeyBytes, maxCacheKeyBytes)
	}
	key := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, key); err != nil {
		return nil, err
	}
	return key, nil
}

// outsideDir refuses p when dir (whose FileInfo is di) or a directory
// that is dir (a link to it, a bind mount of it) holds it.
func outsideDir(p, dir string, di fs.FileInfo) error {
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && os.SameFile(fi, di) {
			return fmt.Errorf("it is inside the compile cache %s: whoever may write the cache must not read its key", dir)
		}
		if filepath.Dir(d) == d {
			return nil
		}
	}
}

// createCacheKey writes a new random key at p, unless a file appears there
// meanwhile (another server sharing the default): the key is written to a
// temporary file, then linked at p, which never replaces a file and never
// shows a partial key.
func createCacheKey(p string) error {
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	key := make([]byte, cacheKeyBytes)
	rand.Read(key)
	tmp, err := os.CreateTemp(dir, ".compile-cache-key-*") // mode 0600
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(key)
	err = errors.Join(err, tmp.Sync(), tmp.Close())
	if err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), p); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}
