package roundstate

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// TTL is how long a sealed state opens after it was issued: long enough
// for a person to answer a question, short enough that an old state is
// not replayed forever.
const TTL = time.Hour

// MaxBytes bounds a sealed state, as the client echoes it and as the host
// issues it: the answers it carries are bounded by the questions a call
// may ask and the size of an answer.
const MaxBytes = 512 << 10

// KeyBytes is the size of a sealing key.
const KeyBytes = 32

// ErrInvalid is wrapped by every error of [Sealer.Open]: the state does
// not open (altered, issued for another request, or expired).
var ErrInvalid = errors.New("requestState is not valid")

// ErrTooLarge is returned by [Sealer.Seal] for a state past MaxBytes.
var ErrTooLarge = errors.New("the round's answers are too large to carry in requestState")

// version prefixes every sealed state, so a later format can tell them
// apart.
const version = "v1"

// Binding is what a state is bound to: the request it may come back
// with. Args are the request's arguments as JSON (whitespace does not
// matter; member order does).
type Binding struct {
	Tenant string // the caller's tenant ("" without authentication)
	Method string // tools/call or prompts/get
	Name   string // the tool or prompt
	Args   json.RawMessage
}

// State is what a sealed state carries.
type State struct {
	// Answers are the answers the tool took in earlier rounds, by input
	// key, as the client sent them.
	Answers map[string]json.RawMessage `json:"answers,omitempty"`
}

// sealed is the body of a sealed state.
type sealed struct {
	Expires int64                      `json:"exp"` // Unix seconds
	Answers map[string]json.RawMessage `json:"answers,omitempty"`
}

// Sealer seals and opens states with one key. It is safe for concurrent
// use.
type Sealer struct {
	key []byte
	now func() time.Time
}

// New returns a Sealer with key (KeyBytes or more; replicas that serve one
// client share it). With a nil key it makes a random one: its states open
// on this process only.
func New(key []byte) (*Sealer, error) {
	if key == nil {
		key = make([]byte, KeyBytes)
		rand.Read(key)
	}
	if len(key) < KeyBytes {
		return nil, fmt.Errorf("roundstate: a key of %d bytes is too short (at least %d)", len(key), KeyBytes)
	}
	return &Sealer{key: bytes.Clone(key), now: time.Now}, nil
}

// Seal returns st sealed for requests of b, valid for TTL.
func (s *Sealer) Seal(b Binding, st State) (string, error) {
	body, err := json.Marshal(sealed{Expires: s.now().Add(TTL).Unix(), Answers: st.Answers})
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	out := version + "." + enc.EncodeToString(body) + "." + enc.EncodeToString(s.mac(b, body))
	if len(out) > MaxBytes {
		return "", ErrTooLarge
	}
	return out, nil
}

// Open returns the state token carries, if it was sealed for requests of b
// and has not expired.
func (s *Sealer) Open(b Binding, token string) (State, error) {
	if len(token) > MaxBytes {
		return State{}, fmt.Errorf("%w: it is longer than %d bytes", ErrInvalid, MaxBytes)
	}
	v, rest, ok1 := strings.Cut(token, ".")
	body64, mac64, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || v != version {
		return State{}, fmt.Errorf("%w: it is not a state this server issued", ErrInvalid)
	}
	enc := base64.RawURLEncoding
	body, err1 := enc.DecodeString(body64)
	mac, err2 := enc.DecodeString(mac64)
	if err1 != nil || err2 != nil || !hmac.Equal(mac, s.mac(b, body)) {
		return State{}, fmt.Errorf("%w: it was altered or issued for another request", ErrInvalid)
	}
	var st sealed
	if err := json.Unmarshal(body, &st); err != nil {
		return State{}, fmt.Errorf("%w: it cannot be read", ErrInvalid)
	}
	if s.now().Unix() > st.Expires {
		return State{}, fmt.Errorf("%w: it expired", ErrInvalid)
	}
	return State{Answers: st.Answers}, nil
}

// mac is the seal of body for requests of b.
func (s *Sealer) mac(b Binding, body []byte) []byte {
	h := hmac.New(sha256.New, s.key)
	h.Write([]byte("wasmtask requestState " + version + "\x00"))
	for _, f := range []string{b.Tenant, b.Method, b.Name} {
		fmt.Fprintf(h, "%d:%s", len(f), f)
	}
	args := sha256.Sum256(compactArgs(b.Args))
	h.Write(args[:])
	h.Write(body)
	return h.Sum(nil)
}

// compactArgs is args without insignificant whitespace; absent and null
// arguments are {}.
func compactArgs(args json.RawMessage) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, args) != nil {
		return args // not JSON: the request is refused elsewhere; bind the bytes
	}
	if b := buf.Bytes(); len(b) > 0 && !bytes.Equal(b, []byte("null")) {
		return b
	}
	return []byte("{}")
}
