package wasmrt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/tetratelabs/wazero"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
)

// openMounts opens every mount as an os.Root and adds it to cfg. The caller
// closes the returned roots after the call. wazero's WithDirMount is not used:
// it follows symbolic links out of the mounted directory; os.Root does not.
func openMounts(mounts []Mount) (wazero.FSConfig, []*os.Root, error) {
	cfg := wazero.NewFSConfig()
	roots := make([]*os.Root, 0, len(mounts))
	for _, m := range mounts {
		if !path.IsAbs(m.GuestPath) {
			closeRoots(roots)
			return nil, nil, fmt.Errorf("mount %q: guest path is not absolute", m.GuestPath)
		}
		root, err := os.OpenRoot(m.HostDir)
		if err != nil {
			closeRoots(roots)
			return nil, nil, fmt.Errorf("mount %q: %w", m.HostDir, err)
		}
		roots = append(roots, root)
		var fsys experimentalsys.FS = &sysfs.ReadFS{FS: &sysfs.AdaptFS{FS: root.FS()}}
		if m.Write {
			fsys = &rootFS{root: root, fsys: root.FS()}
		}
		cfg = cfg.(sysfs.FSConfig).WithSysFSMount(fsys, m.GuestPath)
	}
	return cfg, roots, nil
}

func closeRoots(roots []*os.Root) {
	for _, r := range roots {
		_ = r.Close()
	}
}

// rootFS is a writable experimentalsys.FS confined to an os.Root. Reads go
// through wazero's fs.FS adapter over root.FS(); opens for writing use
// root.OpenFile so flags (create, truncate, append, exclusive) are honoured.
type rootFS struct {
	experimentalsys.UnimplementedFS
	root *os.Root
	fsys fs.FS
}

const writeFlags = experimentalsys.O_WRONLY | experimentalsys.O_RDWR | experimentalsys.O_CREAT |
	experimentalsys.O_TRUNC | experimentalsys.O_APPEND | experimentalsys.O_EXCL

func rel(p string) string {
	if p == "" || p == "/" {
		return "."
	}
	if p[0] == '/' {
		p = p[1:]
	}
	return path.Clean(p)
}

func errno(err error) experimentalsys.Errno {
	if err == nil {
		return 0
	}
	e := experimentalsys.UnwrapOSError(err)
	if e == experimentalsys.EIO {
		// os.Root reports an escape ("path escapes from parent") without
		// an errno: the guest sees permission denied.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return experimentalsys.EPERM
		}
	}
	return e
}

func (r *rootFS) OpenFile(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	p = rel(p)
	if flag&writeFlags == 0 {
		return (&sysfs.AdaptFS{FS: r.fsys}).OpenFile(p, flag, perm)
	}
	if flag&experimentalsys.O_DIRECTORY != 0 {
		return nil, experimentalsys.EISDIR
	}
	of := 0
	switch {
	case flag&experimentalsys.O_RDWR != 0:
		of = os.O_RDWR
	case flag&experimentalsys.O_WRONLY != 0:
		of = os.O_WRONLY
	}
	for _, f := range []struct {
		w experimentalsys.Oflag
		o int
	}{{experimentalsys.O_APPEND, os.O_APPEND}, {experimentalsys.O_CREAT, os.O_CREATE}, {experimentalsys.O_EXCL, os.O_EXCL}, {experimentalsys.O_TRUNC, os.O_TRUNC}} {
		if flag&f.w != 0 {
			of |= f.o
		}
	}
	f, err := r.root.OpenFile(p, of, perm)
	if err != nil {
		return nil, errno(err)
	}
	return (&sysfs.AdaptFS{FS: &openedFS{FS: r.fsys, name: p, f: f}}).OpenFile(p, experimentalsys.O_RDONLY, perm)
}

// openedFS hands out an already opened file once, then delegates.
type openedFS struct {
	fs.FS
	name string
	f    *os.File
}

func (o *openedFS) Open(name string) (fs.File, error) {
	if f := o.f; f != nil && name == o.name {
		o.f = nil
		return f, nil
	}
	return o.FS.Open(name)
}

func (r *rootFS) Stat(p string) (sys.Stat_t, experimentalsys.Errno) {
	fi, err := r.root.Stat(rel(p))
	if err != nil {
		return sys.Stat_t{}, errno(err)
	}
	return sys.NewStat_t(fi), 0
}

func (r *rootFS) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) {
	fi, err := r.root.Lstat(rel(p))
	if err != nil {
		return sys.Stat_t{}, errno(err)
	}
	return sys.NewStat_t(fi), 0
}

func (r *rootFS) Mkdir(p string, perm fs.FileMode) experimentalsys.Errno {
	return errno(r.root.Mkdir(rel(p), perm))
}

func (r *rootFS) Chmod(p string, perm fs.FileMode) experimentalsys.Errno {
	return errno(r.root.Chmod(rel(p), perm))
}

func (r *rootFS) Rename(from, to string) experimentalsys.Errno {
	return errno(r.root.Rename(rel(from), rel(to)))
}

func (r *rootFS) Rmdir(p string) experimentalsys.Errno {
	fi, err := r.root.Lstat(rel(p))
	if err != nil {
		return errno(err)
	}
	if !fi.IsDir() {
		return experimentalsys.ENOTDIR
	}
	return errno(r.root.Remove(rel(p)))
}

func (r *rootFS) Unlink(p string) experimentalsys.Errno {
	fi, err := r.root.Lstat(rel(p))
	if err != nil {
		return errno(err)
	}
	if fi.IsDir() {
		return experimentalsys.EISDIR
	}
	return errno(r.root.Remove(rel(p)))
}

func (r *rootFS) Link(oldPath, newPath string) experimentalsys.Errno {
	return errno(r.root.Link(rel(oldPath), rel(newPath)))
}

// Symlink creates a link only when its target stays inside the mount: an
// absolute target or one that climbs out with ".." is refused (EPERM). The
// guest could not follow such a link anyway (os.Root), but a host process
// reading the directory later without os.Root would.
func (r *rootFS) Symlink(oldPath, linkName string) experimentalsys.Errno {
	if !symlinkStaysInside(oldPath, rel(linkName)) {
		return experimentalsys.EPERM
	}
	return errno(r.root.Symlink(oldPath, rel(linkName)))
}

// symlinkStaysInside reports whether a link at linkPath (relative to the
// mount root) pointing at target resolves inside the mount, lexically.
func symlinkStaysInside(target, linkPath string) bool {
	if target == "" || path.IsAbs(target) {
		return false
	}
	resolved := path.Join(path.Dir(linkPath), target)
	return resolved != ".." && !strings.HasPrefix(resolved, "../")
}

func (r *rootFS) Readlink(p string) (string, experimentalsys.Errno) {
	s, err := r.root.Readlink(rel(p))
	return s, errno(err)
}
