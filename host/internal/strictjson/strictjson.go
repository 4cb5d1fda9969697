package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
)

// Decode decodes the JSON document b into v, refusing unknown
// fields, fields spelled in another case than their own (encoding/json
// would take "memoryMib" for "memoryMiB"), and trailing data. src, when
// not nil, is the document the operator wrote (YAML turned into b):
// positions are then looked up there by the member's name.
func Decode(b, src []byte, v any) error {
	if src == nil {
		src = b
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errors.New(describeDecodeError(b, src, dec, err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the document")
	}
	var tree any
	if err := json.Unmarshal(b, &tree); err != nil {
		return err
	}
	return exactNames(tree, reflect.TypeOf(v).Elem(), "", src)
}

// describeDecodeError says where and what err, from decoding b, is.
func describeDecodeError(b, src []byte, dec *json.Decoder, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se) && bytes.Equal(b, src):
		return fmt.Sprintf("%s: %s", position(src, se.Offset-1), strings.TrimPrefix(se.Error(), "json: ")) // Offset is past the byte
	case errors.As(err, &te):
		return fmt.Sprintf("%s%q must be %s, not %s", keyPosition(src, te.Field), te.Field, kindOf(te.Type), valueKind(te.Value))
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "the document ends before its value does"
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if name, ok := strings.CutPrefix(msg, "unknown field "); ok {
		if n, err := jsonUnquote(name); err == nil {
			return keyPosition(src, n) + msg
		}
		if bytes.Equal(b, src) {
			return fmt.Sprintf("%s: %s", position(src, dec.InputOffset()), msg)
		}
	}
	return msg
}

// exactNames walks tree, decoded into t already, and refuses a member
// whose name matches a field of t only when case is ignored.
func exactNames(tree any, t reflect.Type, path string, src []byte) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]()) {
		return nil
	}
	switch node := tree.(type) {
	case map[string]any:
		keys := make([]string, 0, len(node))
		for k := range node {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			var elem reflect.Type
			switch t.Kind() {
			case reflect.Map:
				elem = t.Elem()
			case reflect.Struct:
				f, exact := fieldOf(t, k)
				if f == nil {
					continue // encoding/json refused it already, or it is ignored
				}
				if !exact {
					return fmt.Errorf("%sunknown field %q in %s (did you mean %q?)", keyPosition(src, k), k, where(path), tagName(*f))
				}
				elem = f.Type
			default:
				continue
			}
			if err := exactNames(node[k], elem, join(path, k), src); err != nil {
				return err
			}
		}
	case []any:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for i, x := range node {
				if err := exactNames(x, t.Elem(), fmt.Sprintf("%s[%d]", path, i), src); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// fieldOf finds the field of struct t named name in JSON, exactly or
// ignoring case.
func fieldOf(t reflect.Type, name string) (f *reflect.StructField, exact bool) {
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct {
			if g, ex := fieldOf(sf.Type, name); g != nil {
				return g, ex
			}
			continue
		}
		switch n := tagName(sf); {
		case n == name:
			return &sf, true
		case strings.EqualFold(n, name) && f == nil:
			f = &sf
		}
	}
	return f, false
}

func tagName(f reflect.StructField) string {
	n, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if n == "" {
		return f.Name
	}
	return n
}

func where(path string) string {
	if path == "" {
		return "the document"
	}
	return fmt.Sprintf("%q", path)
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// kindOf names what a value of t is in JSON.
func kindOf(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

// valueKind names, with its article, the kind of JSON value an
// UnmarshalTypeError found ("string", "number 1.5", …).
func valueKind(v string) string {
	switch k, _, _ := strings.Cut(v, " "); k {
	case "string":
		return "a string"
	case "number":
		return "a number"
	case "bool":
		return "true or false"
	case "array":
		return "an array"
	case "object":
		return "an object"
	}
	return v
}

// position is "line L, column C" of byte offset off of b.
func position(b []byte, off int64) string {
	off = min(max(off, 0), int64(len(b)))
	before := b[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("line %d, column %d", line, col)
}

// keyPosition is "line L, column C: " of the first place src names the
// last member of path (as a JSON string or a YAML key), or "".
func keyPosition(src []byte, path string) string {
	name := path
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		name = path[i+1:]
	}
	for _, needle := range []string{`"` + name + `"`, name + ":"} {
		if i := bytes.Index(src, []byte(needle)); i >= 0 {
			return position(src, int64(i)) + ": "
		}
	}
	return ""
}

func jsonUnquote(s string) (string, error) {
	var out string
	err := json.Unmarshal([]byte(s), &out)
	return out, err
}
