package uritemplate

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/wasmtask/wasmtask/abi"
)

// Template is a compiled URI template.
type Template struct {
	text  string
	re    *regexp.Regexp
	slots []slot // what each capture group of re holds
}

// slot says what a capture group holds: one variable's value, or (for ?
// & ; expressions) name=value pairs of the listed variables.
type slot struct {
	vars  []string // the pair expression's variables
	name  string   // the one variable, for other expressions
	pairs byte     // 0, or the pairs' separator
}

// Character classes of RFC 6570 expansions: simple expansion leaves only
// unreserved characters unencoded; reserved expansion (+ and #) also the
// reserved ones.
const (
	pct        = `%[0-9A-Fa-f]{2}`
	unreserved = `(?:[A-Za-z0-9\-._~]|` + pct + `)`
	reserved   = `(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|` + pct + `)`
)

// Compile compiles template t.
func Compile(t string) (*Template, error) {
	parts, err := abi.ParseTemplate(t)
	if err != nil {
		return nil, err
	}
	c := &Template{text: t}
	var b strings.Builder
	b.WriteString("^")
	for _, p := range parts {
		if p.Op == 0 {
			b.WriteString(regexp.QuoteMeta(p.Literal))
			continue
		}
		c.expression(&b, p)
	}
	b.WriteString("$")
	if c.re, err = regexp.Compile(b.String()); err != nil {
		return nil, fmt.Errorf("does not compile: %v", err) // cannot happen: built from quoted parts
	}
	return c, nil
}

// expression writes the pattern of one expression and records its slots.
func (c *Template) expression(b *strings.Builder, p abi.TemplatePart) {
	value := unreserved
	switch p.Op {
	case '+', '#':
		value = reserved
	}
	capture := func(name string) string {
		c.slots = append(c.slots, slot{name: name})
		return "(" + value + "*?)"
	}
	switch p.Op {
	case ' ', '+', '#':
		// v1[,v2[,v3]], each later one optional; # leads with '#'.
		var inner strings.Builder
		lead := ""
		if p.Op == '#' {
			lead = "#"
		}
		groups := make([]string, len(p.Vars))
		for i, v := range p.Vars {
			groups[i] = capture(v)
		}
		tail := ""
		for i := len(groups) - 1; i >= 1; i-- {
			tail = "(?:," + groups[i] + tail + ")?"
		}
		inner.WriteString(groups[0] + tail)
		if lead != "" {
			b.WriteString("(?:" + regexp.QuoteMeta(lead) + inner.String() + ")?")
		} else {
			b.WriteString(inner.String())
		}
	case '.', '/':
		for _, v := range p.Vars {
			b.WriteString("(?:" + regexp.QuoteMeta(string(p.Op)) + capture(v) + ")?")
		}
	case ';', '?', '&':
		// name=value pairs, split and checked after the match.
		sep := byte('&')
		if p.Op == ';' {
			sep = ';'
		}
		c.slots = append(c.slots, slot{vars: p.Vars, pairs: sep})
		b.WriteString("(?:" + regexp.QuoteMeta(string(p.Op)) + "((?:" + unreserved + "|[=" + regexp.QuoteMeta(string(sep)) + "])*))?")
	}
}

// String is the template's text.
func (c *Template) String() string { return c.text }

// Match reports whether uri is an expansion of the template, and the
// values of its variables (a variable the expansion leaves out is absent).
func (c *Template) Match(uri string) (map[string]string, bool) {
	if len(uri) > abi.MaxURIBytes {
		return nil, false
	}
	m := c.re.FindStringSubmatchIndex(uri)
	if m == nil {
		return nil, false
	}
	vars := map[string]string{}
	for i, s := range c.slots {
		start, end := m[2*i+2], m[2*i+3]
		if start < 0 {
			continue // an optional part the URI leaves out
		}
		text := uri[start:end]
		if s.pairs == 0 {
			v, err := url.PathUnescape(text)
			if err != nil {
				return nil, false
			}
			vars[s.name] = v
			continue
		}
		if text == "" {
			continue
		}
		for _, pair := range strings.Split(text, string(s.pairs)) {
			k, v, _ := strings.Cut(pair, "=")
			if _, dup := vars[k]; dup || !contains(s.vars, k) {
				return nil, false // a name the template does not list, or twice
			}
			dv, err := url.PathUnescape(v)
			if err != nil {
				return nil, false
			}
			vars[k] = dv
		}
	}
	return vars, true
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
