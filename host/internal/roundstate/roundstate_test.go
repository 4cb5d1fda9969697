package roundstate

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func testSealer(t *testing.T) *Sealer {
	t.Helper()
	s, err := New([]byte(strings.Repeat("k", KeyBytes)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var bound = Binding{Tenant: "acme", Method: "tools/call", Name: "greet", Args: json.RawMessage(`{"a": 1}`)}

func TestSealOpens(t *testing.T) {
	s := testSealer(t)
	st := State{Answers: map[string]json.RawMessage{"user_name": json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`)}}
	tok, err := s.Seal(bound, st)
	if err != nil {
		t.Fatal(err)
	}
	same := bound
	same.Args = json.RawMessage("{\"a\":1}\n") // whitespace does not matter
	got, err := s.Open(same, tok)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if string(got.Answers["user_name"]) != string(st.Answers["user_name"]) || len(got.Answers) != 1 {
		t.Errorf("Open: got %v, want %v", got.Answers, st.Answers)
	}
	// Another sealer with the same key opens it (replicas share a key).
	if _, err := testSealer(t).Open(bound, tok); err != nil {
		t.Errorf("Open with the same key elsewhere: %v", err)
	}
}

func TestOpenRefuses(t *testing.T) {
	s := testSealer(t)
	tok, err := s.Seal(bound, State{Answers: map[string]json.RawMessage{"k": json.RawMessage(`1`)}})
	if err != nil {
		t.Fatal(err)
	}
	other := func(f func(*Binding)) Binding { b := bound; f(&b); return b }
	// A byte of the decoded body changed, encoded again: only the MAC
	// can tell.
	v, rest, _ := strings.Cut(tok, ".")
	body64, mac64, _ := strings.Cut(rest, ".")
	body, _ := base64.RawURLEncoding.DecodeString(body64)
	body[len(body)-2] ^= 1
	flip := v + "." + base64.RawURLEncoding.EncodeToString(body) + "." + mac64
	random, _ := New(nil)
	cases := map[string]struct {
		s     *Sealer
		b     Binding
		token string
	}{
		"suffix":       {s, bound, tok + "-TAMPERED"},
		"body altered": {s, bound, flip},
		"empty":        {s, bound, ""},
		"not issued":   {s, bound, "opaque-server-state"},
		"other tenant": {s, other(func(b *Binding) { b.Tenant = "evil" }), tok},
		"other tool":   {s, other(func(b *Binding) { b.Name = "delete" }), tok},
		"other method": {s, other(func(b *Binding) { b.Method = "prompts/get" }), tok},
		"other args":   {s, other(func(b *Binding) { b.Args = json.RawMessage(`{"a":2}`) }), tok},
		"other key":    {random, bound, tok},
		"too long":     {s, bound, tok + strings.Repeat("x", MaxBytes)},
	}
	for name, c := range cases {
		if _, err := c.s.Open(c.b, c.token); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Open = %v, want ErrInvalid", name, err)
		}
	}
}

func TestOpenRefusesExpired(t *testing.T) {
	s := testSealer(t)
	now := time.Unix(1_800_000_000, 0)
	s.now = func() time.Time { return now }
	tok, err := s.Seal(bound, State{})
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(TTL)
	if _, err := s.Open(bound, tok); err != nil {
		t.Fatalf("Open at its expiry: %v", err)
	}
	now = now.Add(time.Second)
	if _, err := s.Open(bound, tok); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("Open after its expiry: %v, want ErrInvalid (expired)", err)
	}
}

func TestSealBounds(t *testing.T) {
	if _, err := New([]byte("short")); err == nil {
		t.Error("New accepted a 5-byte key")
	}
	s := testSealer(t)
	big := json.RawMessage(`"` + strings.Repeat("x", MaxBytes) + `"`)
	if _, err := s.Seal(bound, State{Answers: map[string]json.RawMessage{"k": big}}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Seal of a state past MaxBytes: %v, want ErrTooLarge", err)
	}
}
