package cursor

import (
	"testing"
)

func TestCursorCodec(t *testing.T) {
	c := New()
	other := New()
	s := c.Encode("alice", 42)
	tests := []struct {
		name   string
		codec  *Codec
		owner  string
		cursor string
		want   uint64
		ok     bool
	}{
		{"round trip", &c, "alice", s, 42, true},
		{"other owner", &c, "bob", s, 0, false},
		{"other engine", &other, "alice", s, 0, false},
		{"truncated", &c, "alice", s[:len(s)-1], 0, false},
		{"one char changed", &c, "alice", flip(s), 0, false},
		{"not base64", &c, "alice", "!!!!!!!!!!!!!!!!!!!!!!", 0, false},
		{"padded", &c, "alice", s + "==", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.codec.Decode(tt.owner, tt.cursor)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Decode: got %d, %v; want %d, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
	if a, b := c.Encode("alice", 1), c.Encode("alice", 2); a == b || len(a) != Len {
		t.Errorf("cursors %q and %q: want distinct, %d chars", a, b, Len)
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
// makes decodes to its position for its owner only.
func FuzzCursor(f *testing.F) {
	c := New()
	f.Add("alice", c.Encode("alice", 1), uint64(1))
	f.Add("", c.Encode("", 0), uint64(0))
	f.Add("bob", "", uint64(1<<63))
	f.Add("alice", "AAAAAAAAAAAAAAAAAAAAAA", uint64(7))
	f.Add("alice\x00", "____________________-_", uint64(99))
	f.Fuzz(func(t *testing.T, owner, cursor string, seq uint64) {
		if pos, ok := c.Decode(owner, cursor); ok {
			// Only cursors issued for owner decode: re-encoding gives them back.
			if again := c.Encode(owner, pos); again != cursor {
				t.Fatalf("Decode(%q, %q) = %d, but that position encodes as %q", owner, cursor, pos, again)
			}
		}
		s := c.Encode(owner, seq)
		if got, ok := c.Decode(owner, s); !ok || got != seq {
			t.Fatalf("round trip of %d for %q: got %d, %v", seq, owner, got, ok)
		}
		if _, ok := c.Decode(owner+"x", s); ok {
			t.Fatalf("cursor of %q accepted for %q", owner, owner+"x")
		}
	})
}
