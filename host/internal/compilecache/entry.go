package compilecache

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"time"
)

// A compile cache entry is one file holding what wazero's file cache wrote
// for one module, authenticated with the server's key:
//
//	body  = "WTCC" | version (1 byte, 1) | n (1 byte, 1..maxEntryFiles)
//	        | n × ( name length (2 bytes LE) | name | size (8 bytes LE) | bytes )
//	entry = body | HMAC-SHA256(key, entryDomain | module digest | body)
//
// The names are paths relative to the directory wazero's cache was given,
// as wazero chose them; the host does not interpret them beyond refusing
// any that could leave that directory. The module digest is the SHA-256 of
// the module's instrumented bytes, so an entry copied from another module's
// name fails the MAC like a forged one. The tag is checked before anything
// of the body is read (openEntry), so wazero is only ever given bytes this
// server's key vouches for.
const (
	entryMagic    = "WTCC"
	entryVersion  = 1
	entryDomain   = "wasmtask compile cache entry v1\x00"
	entryTagSize  = sha256.Size
	maxEntryFiles = 8   // wazero writes one file per module
	maxEntryName  = 255 // bytes of one name
	entryHeadSize = len(entryMagic) + 2
)

// maxEntryBytes bounds the entry of a module whose instrumented bytes are n
// long: 16n + 1 MiB. wazero's compiled code is 1.8 to 3.9 times the
// instrumented module (measured on WAT, C and Go tools: the Go demo's
// 4.6 MB give a 15.6 MB entry), so no real module comes near it; an entry
// past it is neither written nor read.
func maxEntryBytes(n int) int64 { return 16*int64(n) + 1<<20 }

// entryFile is one file of an entry.
type entryFile struct {
	name string // slash-separated, relative (validEntryName)
	data []byte
}

// entryMAC returns the MAC of the entry of the module whose digest is
// digest, with its domain and digest written.
func entryMAC(key []byte, digest [sha256.Size]byte) hash.Hash {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(entryDomain))
	mac.Write(digest[:])
	return mac
}

// errNoEntry: the module has no entry yet.
var errNoEntry = errors.New("no entry")

// readEntryFile reads the entry file at p into memory, refusing anything but
// a regular file of this user, not writable by others, of at most max
// bytes. It never blocks on what it finds: the name is examined with Lstat,
// then opened without following a link and without waiting for a writer
// (O_NOFOLLOW|O_NONBLOCK), and the open file is checked again (fstat) to be
// the one examined. On success the file's mtime is set to now (the cache's
// LRU order) through the open file.
func readEntryFile(p string, max int64) ([]byte, error) {
	lfi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoEntry
	}
	if err != nil {
		return nil, err
	}
	if err := entryFileOK(lfi, max); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoEntry // evicted meanwhile
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !os.SameFile(lfi, fi) {
		return nil, errors.New("it was replaced while being opened")
	}
	if err := entryFileOK(fi, max); err != nil {
		return nil, err
	}
	b := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, fmt.Errorf("reading it: %w", err)
	}
	if n, _ := f.Read(make([]byte, 1)); n > 0 {
		return nil, errors.New("it grew while being read")
	}
	now := syscall.NsecToTimeval(time.Now().UnixNano())
	_ = syscall.Futimes(int(f.Fd()), []syscall.Timeval{now, now})
	return b, nil
}

// entryFileOK checks what fi says of an entry file.
func entryFileOK(fi fs.FileInfo, max int64) error {
	if t := fi.Mode().Type(); t != 0 {
		hint := ""
		if t&fs.ModeDir != 0 {
			hint = " (an older version's entry, or planted)"
		}
		return fmt.Errorf("it is %s, not a regular file%s", fileKind(t), hint)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("it is writable by group or others (mode %v)", fi.Mode().Perm())
	}
	if !ownFile(fi) {
		return fmt.Errorf("it is owned by uid %d, not by this process (uid %d)", fi.Sys().(*syscall.Stat_t).Uid, os.Geteuid())
	}
	if fi.Size() > max {
		return fmt.Errorf("it has %d bytes, more than the %d an entry of this module may have", fi.Size(), max)
	}
	return nil
}

// ownFile reports whether this process's user owns the file fi describes.
func ownFile(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return !ok || int(st.Uid) == os.Geteuid()
}

func fileKind(t fs.FileMode) string {
	switch {
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file (" + t.String() + ")"
}

// openEntry authenticates an entry of the module whose digest is digest
// and decodes it. Nothing of data is interpreted before its MAC matches.
func openEntry(key []byte, digest [sha256.Size]byte, data []byte) ([]entryFile, error) {
	if len(data) < entryHeadSize+entryTagSize {
		return nil, fmt.Errorf("it is truncated (%d bytes)", len(data))
	}
	body, tag := data[:len(data)-entryTagSize], data[len(data)-entryTagSize:]
	mac := entryMAC(key, digest)
	mac.Write(body)
	if !hmac.Equal(mac.Sum(nil), tag) {
		return nil, errors.New("its MAC does not match: written with another key, for another module, or altered")
	}
	return decodeEntry(body)
}

// decodeEntry decodes an entry's body (whose MAC has been checked).
func decodeEntry(body []byte) ([]entryFile, error) {
	if len(body) < entryHeadSize || string(body[:len(entryMagic)]) != entryMagic {
		return nil, errors.New("it is not an entry")
	}
	if v := body[len(entryMagic)]; v != entryVersion {
		return nil, fmt.Errorf("its format version is %d, this server reads %d", v, entryVersion)
	}
	n := int(body[len(entryMagic)+1])
	if n == 0 || n > maxEntryFiles {
		return nil, fmt.Errorf("it holds %d files, want 1 to %d", n, maxEntryFiles)
	}
	p := body[entryHeadSize:]
	files := make([]entryFile, 0, n)
	for i := range n {
		if len(p) < 2 {
			return nil, fmt.Errorf("file %d: truncated name length", i)
		}
		l := int(binary.LittleEndian.Uint16(p))
		p = p[2:]
		if l > len(p) {
			return nil, fmt.Errorf("file %d: name of %d bytes, %d left", i, l, len(p))
		}
		name := string(p[:l])
		p = p[l:]
		if !validEntryName(name) {
			return nil, fmt.Errorf("file %d: name %q is not a relative path of plain components", i, name)
		}
		for _, f := range files {
			if f.name == name {
				return nil, fmt.Errorf("file %d: name %q appears twice", i, name)
			}
		}
		if len(p) < 8 {
			return nil, fmt.Errorf("file %d: truncated size", i)
		}
		size := binary.LittleEndian.Uint64(p)
		p = p[8:]
		if size > uint64(len(p)) {
			return nil, fmt.Errorf("file %d: %d bytes, %d left", i, size, len(p))
		}
		files = append(files, entryFile{name: name, data: p[:size]})
		p = p[size:]
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("%d bytes after its last file", len(p))
	}
	return files, nil
}

// validEntryName reports whether name is a path the host writes a file of
// an entry at: relative, slash-separated, at most 4 components of letters,
// digits and ".-_+", none of them "." or "..", 255 bytes at most.
func validEntryName(name string) bool {
	if name == "" || len(name) > maxEntryName {
		return false
	}
	parts := strings.Split(name, "/")
	if len(parts) > 4 {
		return false
	}
	for _, c := range parts {
		if c == "" || c == "." || c == ".." {
			return false
		}
		for i := range len(c) {
			switch b := c[i]; {
			case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9', b == '.', b == '-', b == '_', b == '+':
			default:
				return false
			}
		}
	}
	return path.Clean(name) == name
}

// entryWriter encodes an entry to w as its files are added, MAC included:
// the files need not be held in memory together.
type entryWriter struct {
	w    io.Writer
	mac  hash.Hash
	left int // files still to add
	err  error
}

// newEntryWriter writes the header of an entry of n files (1..maxEntryFiles)
// of the module whose digest is digest.
func newEntryWriter(w io.Writer, key []byte, digest [sha256.Size]byte, n int) *entryWriter {
	e := &entryWriter{w: w, mac: entryMAC(key, digest), left: n}
	if n == 0 || n > maxEntryFiles {
		e.err = fmt.Errorf("%d files, want 1 to %d", n, maxEntryFiles)
		return e
	}
	e.write(append([]byte(entryMagic), entryVersion, byte(n)))
	return e
}

func (e *entryWriter) write(b []byte) {
	if e.err != nil {
		return
	}
	e.mac.Write(b)
	_, e.err = e.w.Write(b)
}

// add writes one file of size bytes read from r.
func (e *entryWriter) add(name string, size int64, r io.Reader) {
	if e.err == nil && !validEntryName(name) {
		e.err = fmt.Errorf("file name %q is not a relative path of plain components", name)
	}
	if e.left--; e.err == nil && e.left < 0 {
		e.err = errors.New("more files than announced")
	}
	var head []byte
	head = binary.LittleEndian.AppendUint16(head, uint16(len(name)))
	head = append(head, name...)
	head = binary.LittleEndian.AppendUint64(head, uint64(size))
	e.write(head)
	if e.err != nil {
		return
	}
	var n int64
	n, e.err = io.CopyN(io.MultiWriter(e.w, e.mac), r, size)
	if e.err == nil && n != size {
		e.err = io.ErrUnexpectedEOF
	}
}

// close writes the MAC and returns the first error.
func (e *entryWriter) close() error {
	if e.err == nil && e.left != 0 {
		e.err = fmt.Errorf("%d files announced but not added", e.left)
	}
	if e.err != nil {
		return e.err
	}
	_, e.err = e.w.Write(e.mac.Sum(nil))
	return e.err
}
