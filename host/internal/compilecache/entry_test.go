package compilecache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var (
	fuzzKey    = bytes.Repeat([]byte{0x5a}, 32)
	fuzzDigest = sha256.Sum256([]byte("module"))
)

// encodeEntry is the entry of files, MAC included.
func encodeEntry(tb testing.TB, key []byte, digest [sha256.Size]byte, files []entryFile) []byte {
	tb.Helper()
	var buf bytes.Buffer
	w := newEntryWriter(&buf, key, digest, len(files))
	for _, f := range files {
		w.add(f.name, int64(len(f.data)), bytes.NewReader(f.data))
	}
	if err := w.close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// sign appends the MAC of body.
func sign(key []byte, digest [sha256.Size]byte, body []byte) []byte {
	mac := entryMAC(key, digest)
	mac.Write(body)
	return mac.Sum(bytes.Clone(body))
}

// rawBody is an entry body written by hand, for bodies the writer refuses.
func rawBody(n byte, files ...entryFile) []byte {
	b := append([]byte(entryMagic), entryVersion, n)
	for _, f := range files {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(f.name)))
		b = append(b, f.name...)
		b = binary.LittleEndian.AppendUint64(b, uint64(len(f.data)))
		b = append(b, f.data...)
	}
	return b
}

var sampleFiles = []entryFile{{"wazero-dev-amd64-linux/0123abcd", []byte("WAZEVO\x03dev code")}, {"other", nil}}

func TestEntryRoundTrip(t *testing.T) {
	data := encodeEntry(t, fuzzKey, fuzzDigest, sampleFiles)
	files, err := openEntry(fuzzKey, fuzzDigest, data)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(sampleFiles) {
		t.Fatalf("got %d files, want %d", len(files), len(sampleFiles))
	}
	for i, f := range files {
		if f.name != sampleFiles[i].name || !bytes.Equal(f.data, sampleFiles[i].data) {
			t.Errorf("file %d = %q %q, want %q %q", i, f.name, f.data, sampleFiles[i].name, sampleFiles[i].data)
		}
	}
	other := sha256.Sum256([]byte("another module"))
	if _, err := openEntry(fuzzKey, other, data); err == nil || !strings.Contains(err.Error(), "MAC") {
		t.Errorf("the entry opened for another module's digest: %v, want a MAC mismatch", err)
	}
	if _, err := openEntry(bytes.Repeat([]byte{1}, 32), fuzzDigest, data); err == nil || !strings.Contains(err.Error(), "MAC") {
		t.Errorf("the entry opened with another key: %v, want a MAC mismatch", err)
	}
}

// TestEntryDecodeRefuses: bodies that pass the MAC but that this server
// would not have written are refused, each with its reason.
func TestEntryDecodeRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		body []byte
		want string
	}{
		{"not an entry", []byte("WAZEVO\x03dev"), "not an entry"},
		{"another version", append([]byte(entryMagic), 2, 1), "format version is 2"},
		{"no files", rawBody(0), "holds 0 files"},
		{"too many files", rawBody(maxEntryFiles + 1), "holds 9 files"},
		{"fewer files than announced", rawBody(2, entryFile{"a", []byte("x")}), "file 1: truncated name length"},
		{"trailing bytes", append(rawBody(1, entryFile{"a", []byte("x")}), 0), "1 bytes after its last file"},
		{"absolute name", rawBody(1, entryFile{"/etc/passwd", nil}), "not a relative path"},
		{"name leaving the directory", rawBody(1, entryFile{"../x", nil}), "not a relative path"},
		{"dot component", rawBody(1, entryFile{"a/./b", nil}), "not a relative path"},
		{"empty component", rawBody(1, entryFile{"a//b", nil}), "not a relative path"},
		{"empty name", rawBody(1, entryFile{"", nil}), "not a relative path"},
		{"backslash", rawBody(1, entryFile{`a\b`, nil}), "not a relative path"},
		{"deep name", rawBody(1, entryFile{"a/b/c/d/e", nil}), "not a relative path"},
		{"duplicate name", rawBody(2, entryFile{"a", nil}, entryFile{"a", nil}), "appears twice"},
		{"name past the end", append(rawBody(1), 0xff, 0xff, 'a'), "name of 65535 bytes"},
		{"size past the end", binary.LittleEndian.AppendUint64(append(rawBody(1), 1, 0, 'a'), 1<<63), "9223372036854775808 bytes, 0 left"},
		{"truncated size", append(rawBody(1), 1, 0, 'a', 1), "truncated size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := openEntry(fuzzKey, fuzzDigest, sign(fuzzKey, fuzzDigest, tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// FuzzEntryFile feeds arbitrary bytes through everything a compile does
// with an entry file before wazero sees it: read the file, check its MAC
// (signed: the bytes carry a valid MAC, as if the key were known, so that
// the decoder is reached), decode it and write its files into a private
// directory. Nothing may panic, hang or write outside that directory, and
// whatever decodes must encode back to the same bytes.
func FuzzEntryFile(f *testing.F) {
	f.Add(encodeEntry(f, fuzzKey, fuzzDigest, sampleFiles), false)
	f.Add(rawBody(1, entryFile{"a", []byte("x")}), true)
	f.Add(rawBody(2, entryFile{"a/b", nil}, entryFile{"../c", []byte("y")}), true)
	f.Add(rawBody(maxEntryFiles, entryFile{"a", nil}), true)
	f.Add(append(rawBody(1), 0xff, 0xff), true)
	f.Add([]byte("WAZEVO\x03dev\xff\xff\xff\xff"), true)
	f.Add([]byte{}, false)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, signed bool) {
		if signed {
			data = sign(fuzzKey, fuzzDigest, data)
		}
		p := filepath.Join(dir, "entry")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		read, err := readEntryFile(p, maxEntryBytes(len(data)))
		if err != nil {
			t.Fatalf("reading a regular file of its bound: %v", err)
		}
		files, err := openEntry(fuzzKey, fuzzDigest, read)
		if err != nil {
			return
		}
		if got := encodeEntry(t, fuzzKey, fuzzDigest, files); !bytes.Equal(got, data) {
			t.Fatalf("decoded %d files that encode to other bytes", len(files))
		}
		s := &Stage{dir: t.TempDir()}
		if err := s.restore(files); err != nil {
			t.Fatalf("restoring a decoded entry: %v", err)
		}
		names, err := s.written()
		if err != nil || len(names) != 0 {
			t.Fatalf("after a restore, written() = %v, %v: want nothing new", names, err)
		}
		for _, f := range files {
			if got, err := os.ReadFile(filepath.Join(s.dir, filepath.FromSlash(f.name))); err != nil || !bytes.Equal(got, f.data) {
				t.Fatalf("restored %s: %q, %v; want %q", f.name, got, err, f.data)
			}
		}
	})
}
