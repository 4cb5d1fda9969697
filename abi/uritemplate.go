package abi

import (
	"errors"
	"fmt"
	"strings"
)

// RFC 6570 URI templates, as resource templates use them: parsed and
// checked here, by hand (no regexp: a Go guest that links this package
// stays small), within bounds ([MaxTemplateBytes],
// [MaxTemplateExpressions]). The host matches URIs against the parsed
// form; a module reads the values it matched in [Request.Variables].

// TemplatePart is a literal (Op 0) or an expression of a URI template.
type TemplatePart struct {
	Literal string
	Op      byte // 0 literal, ' ' simple, or one of + # . / ; ? &
	Vars    []string
}

// ParseTemplate splits URI template t into literals and expressions, or
// says what is wrong with it.
func ParseTemplate(t string) ([]TemplatePart, error) {
	if t == "" {
		return nil, errors.New("is empty")
	}
	if len(t) > MaxTemplateBytes {
		return nil, fmt.Errorf("is %d bytes, more than %d", len(t), MaxTemplateBytes)
	}
	var parts []TemplatePart
	exprs := 0
	for i := 0; i < len(t); {
		c := t[i]
		switch {
		case c == '{':
			end := strings.IndexByte(t[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("an expression at byte %d has no closing brace", i)
			}
			body := t[i+1 : i+end]
			if exprs++; exprs > MaxTemplateExpressions {
				return nil, fmt.Errorf("has more than %d expressions", MaxTemplateExpressions)
			}
			p, err := parseExpression(body)
			if err != nil {
				return nil, fmt.Errorf("expression {%s}: %v", truncateText(body), err)
			}
			for _, v := range p.Vars {
				for _, q := range parts {
					if containsString(q.Vars, v) {
						return nil, fmt.Errorf("names %q twice", v)
					}
				}
			}
			parts = append(parts, p)
			i += end + 1
		case c == '}':
			return nil, fmt.Errorf("a closing brace at byte %d opens no expression", i)
		case c <= ' ' || c >= 0x7f || c == '"' || c == '\'' || c == '<' || c == '>' || c == '\\' || c == '^' || c == '`' || c == '|':
			return nil, fmt.Errorf("byte %d is not allowed in a template literal", i)
		default:
			j := i
			for j < len(t) && t[j] != '{' && t[j] != '}' {
				j++
			}
			lit := t[i:j]
			for k := 0; k < len(lit); k++ {
				if b := lit[k]; b <= ' ' || b >= 0x7f || strings.IndexByte("\"'<>\\^`|", b) >= 0 {
					return nil, fmt.Errorf("byte %d is not allowed in a template literal", i+k)
				}
			}
			parts = append(parts, TemplatePart{Literal: lit})
			i = j
		}
	}
	if len(parts) == 0 || parts[0].Op != 0 || CheckURI(parts[0].Literal+"x") != nil {
		return nil, errors.New("does not start with a scheme (such as file:)")
	}
	return parts, nil
}

// parseExpression parses the inside of {…}: an optional operator and a
// comma-separated list of variables, each with an optional :N prefix or *
// explode modifier (accepted, and matched as plain values).
func parseExpression(body string) (TemplatePart, error) {
	p := TemplatePart{Op: ' '}
	if body != "" && strings.IndexByte("+#./;?&", body[0]) >= 0 {
		p.Op, body = body[0], body[1:]
	}
	if body == "" {
		return p, errors.New("names no variable")
	}
	for _, spec := range strings.Split(body, ",") {
		name := spec
		if n, mod, ok := strings.Cut(spec, ":"); ok {
			if len(mod) == 0 || len(mod) > 4 || strings.Trim(mod, "0123456789") != "" || mod[0] == '0' {
				return p, fmt.Errorf("prefix %q is not 1 to 9999", truncateText(mod))
			}
			name = n
		} else {
			name = strings.TrimSuffix(spec, "*")
		}
		if !validVarName(name) {
			return p, fmt.Errorf("%q is not a variable name", truncateText(name))
		}
		if containsString(p.Vars, name) {
			return p, fmt.Errorf("names %q twice", name)
		}
		p.Vars = append(p.Vars, name)
	}
	return p, nil
}

// validVarName: RFC 6570 varchars (letters, digits, _ and %XX), with
// single dots between them.
func validVarName(s string) bool {
	if s == "" || len(s) > 128 || s[0] == '.' || s[len(s)-1] == '.' || strings.Contains(s, "..") {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.':
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			i += 2
		default:
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// TemplateVars returns the variables of URI template t, in order, or
// what is wrong with it.
func TemplateVars(t string) ([]string, error) {
	parts, err := ParseTemplate(t)
	if err != nil {
		return nil, err
	}
	var vars []string
	for _, p := range parts {
		vars = append(vars, p.Vars...)
	}
	return vars, nil
}
