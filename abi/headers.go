package abi

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// HeaderParam is a tool argument that a 2026-07-28 client mirrors into an
// HTTP header (SEP-2243): the property its inputSchema annotates with
// "x-mcp-header": Name, at Path (a chain of properties keys from the
// schema's root), of Type string, integer or boolean. The header is
// Mcp-Param-{Name}.
type HeaderParam struct {
	Name string
	Path []string
	Type string
}

// MaxHeaderParams bounds the x-mcp-header annotations of one tool.
const MaxHeaderParams = 16

// HeaderParams reads the x-mcp-header annotations of a tool's inputSchema,
// in property-path order, and checks them as SEP-2243 asks: each a
// non-empty HTTP token, unique without regard to case, on a property of
// type string, integer or boolean reached from the root through
// "properties" alone (never through items, a combinator, a condition or a
// $ref); an annotation anywhere else makes the schema invalid.
func HeaderParams(schema json.RawMessage) ([]HeaderParam, error) {
	if len(schema) == 0 {
		return nil, nil
	}
	var root any
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil, err
	}
	var out []HeaderParam
	var path []string
	if err := walkHeaders(root, &path, true, &out); err != nil {
		return nil, err
	}
	if len(out) > MaxHeaderParams {
		return nil, fmt.Errorf("%d x-mcp-header annotations, more than %d", len(out), MaxHeaderParams)
	}
	slices.SortFunc(out, func(a, b HeaderParam) int { return slices.Compare(a.Path, b.Path) })
	for i := range out {
		for j := range i {
			if strings.EqualFold(out[i].Name, out[j].Name) {
				return nil, fmt.Errorf("x-mcp-header %q annotates both %q and %q", out[i].Name, strings.Join(out[j].Path, "."), strings.Join(out[i].Path, "."))
			}
		}
	}
	return out, nil
}

// walkHeaders collects the annotations of node, a schema at *path (a
// stack of properties keys, shared: an annotation records a copy);
// reachable says node is the root or a property of a reachable schema.
// Values that are data, not schemas (default, const, enum, examples),
// are not walked.
func walkHeaders(node any, path *[]string, reachable bool, out *[]HeaderParam) error {
	switch n := node.(type) {
	case []any:
		for _, v := range n {
			if err := walkHeaders(v, path, false, out); err != nil {
				return err
			}
		}
	case map[string]any:
		for _, k := range sortedKeys(n) {
			v := n[k]
			switch {
			case k == "default" || k == "const" || k == "enum" || k == "examples":
			case k == "x-mcp-header":
				where := strings.Join(*path, ".")
				if !reachable || len(*path) == 0 {
					return fmt.Errorf("x-mcp-header under %q is not on a property reached through \"properties\" alone", "/"+strings.Join(*path, "/"))
				}
				name, _ := v.(string)
				if !httpToken(name) {
					return fmt.Errorf("x-mcp-header of %q is %v, want a non-empty HTTP token", where, v)
				}
				typ, _ := n["type"].(string)
				if typ != "string" && typ != "integer" && typ != "boolean" {
					return fmt.Errorf("x-mcp-header %q annotates %q of type %v, want string, integer or boolean", name, where, n["type"])
				}
				if len(*out) == MaxHeaderParams {
					return fmt.Errorf("more than %d x-mcp-header annotations", MaxHeaderParams)
				}
				*out = append(*out, HeaderParam{Name: name, Path: slices.Clone(*path), Type: typ})
			case k == "properties":
				props, _ := v.(map[string]any)
				for _, name := range sortedKeys(props) {
					*path = append(*path, name)
					err := walkHeaders(props[name], path, reachable, out)
					*path = (*path)[:len(*path)-1]
					if err != nil {
						return err
					}
				}
			default: // any other keyword's schemas are not statically reachable
				if err := walkHeaders(v, path, false, out); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// httpToken reports whether s is an HTTP field-name token (RFC 9110
// tchar), 1 to 64 bytes.
func httpToken(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
