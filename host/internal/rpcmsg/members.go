package rpcmsg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrNotObject is Members' error for a value that is not a JSON object.
var ErrNotObject = errors.New("not a JSON object")

// Members returns the members of the JSON object raw by their exact names,
// refusing an object that repeats a name (decoders differ on which of the
// two they keep) and, when check is not nil, any name check refuses.
func Members(raw json.RawMessage, check func(name string) error) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, ErrNotObject
	}
	out := make(map[string]json.RawMessage)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, ErrNotObject
		}
		name, _ := tok.(string)
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("member %q appears twice", name)
		}
		if check != nil {
			if err := check(name); err != nil {
				return nil, err
			}
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, ErrNotObject
		}
		out[name] = v
	}
	return out, nil
}
