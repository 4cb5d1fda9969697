package taskengine

import (
	"errors"
	"testing"
)

func TestCursorCodec(t *testing.T) {
	c := newCursorCodec()
	other := newCursorCodec()
	s := c.encode("alice", 42)
	tests := []struct {
		name   string
		codec  *cursorCodec
		owner  string
		cursor string
		want   uint64
		err    error
	}{
		{"round trip", &c, "alice", s, 42, nil},
		{"other owner", &c, "bob", s, 0, ErrBadCursor},
		{"other engine", &other, "alice", s, 0, ErrBadCursor},
		{"truncated", &c, "alice", s[:len(s)-1], 0, ErrBadCursor},
		{"one char changed", &c, "alice", flip(s), 0, ErrBadCursor},
		{"not base64", &c, "alice", "!!!!!!!!!!!!!!!!!!!!!!", 0, ErrBadCursor},
		{"padded", &c, "alice", s + "==", 0, ErrBadCursor},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.codec.decode(tt.owner, tt.cursor)
			if got != tt.want || !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Errorf("decode: got %d, %v; want %d, %v", got, err, tt.want, tt.err)
			}
		})
	}
	if a, b := c.encode("alice", 1), c.encode("alice", 2); a == b || len(a) != cursorLen {
		t.Errorf("cursors %q and %q: want distinct, %d chars", a, b, cursorLen)
	}
}

func flip(s string) string {
	b := []byte(s)
	if b[5] == 'A' {
		b[5] = 'B'
	} else {
		b[5] = 'A'
	}
	return string(b)
}

// FuzzCursor feeds arbitrary cursors to decode (never a panic, never a
// position that was not issued) and checks that every cursor this engine
// issues decodes to its position for its owner only.
func FuzzCursor(f *testing.F) {
	c := newCursorCodec()
	f.Add("alice", c.encode("alice", 1), uint64(1))
	f.Add("", c.encode("", 0), uint64(0))
	f.Add("bob", "", uint64(1<<63))
	f.Add("alice", "AAAAAAAAAAAAAAAAAAAAAA", uint64(7))
	f.Add("alice\x00", "____________________-_", uint64(99))
	f.Fuzz(func(t *testing.T, owner, cursor string, seq uint64) {
		if pos, err := c.decode(owner, cursor); err == nil {
			// Only cursors issued for owner decode: re-encoding gives them back.
			if again := c.encode(owner, pos); again != cursor {
				t.Fatalf("decode(%q, %q) = %d, but that position encodes as %q", owner, cursor, pos, again)
			}
		} else if !errors.Is(err, ErrBadCursor) {
			t.Fatalf("decode error %v, want ErrBadCursor", err)
		}
		s := c.encode(owner, seq)
		if got, err := c.decode(owner, s); err != nil || got != seq {
			t.Fatalf("round trip of %d for %q: got %d, %v", seq, owner, got, err)
		}
		if _, err := c.decode(owner+"x", s); !errors.Is(err, ErrBadCursor) {
			t.Fatalf("cursor of %q accepted for %q", owner, owner+"x")
		}
	})
}
