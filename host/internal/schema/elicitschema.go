package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
)

// This file checks the requestedSchema of a guest's elicitation: the flat
// form MCP 2025-11-25 allows (schema.ts ElicitRequestFormParams and
// PrimitiveSchemaDefinition), an object of primitive properties. Anything
// else makes elicit return abi.ElicitBadRequest before the client is asked:
// the server validates the client's answer against this schema with the
// same recursive validator as tool schemas (go-sdk's ServerSession.Elicit),
// so a schema with references or combinators could end the process there.

// Bounds on a requestedSchema.
const (
	// maxElicitProperties bounds the properties of a requestedSchema.
	maxElicitProperties = 64
	// maxElicitOptions bounds the choices of one enum property.
	maxElicitOptions = 256
	// elicitDepth is the deepest nesting of the flat form: root,
	// properties, a property, items, anyOf, an option.
	elicitDepth = 6
)

// checkElicitSchema checks that raw is the flat form of a requestedSchema:
//
//	{"$schema"?, "type":"object", "properties":{name: primitive…}, "required"?:[name…], "title"?, "description"?}
//
// where each primitive is one of StringSchema (type "string", minLength,
// maxLength, format email|uri|date|date-time, pattern, default), an enum
// of strings (enum with optional enumNames, or oneOf of {const, title}),
// NumberSchema (type "number" or "integer", minimum, maximum, default),
// BooleanSchema (type "boolean", default), or a multi-select enum (type
// "array", items {type "string", enum} or {anyOf of {const, title}},
// minItems, maxItems, default); each may carry a title and a description.
func CheckElicit(raw json.RawMessage) error {
	root, err := parseJSONTree(raw, elicitDepth)
	if err != nil {
		return err
	}
	if err := members(root, "requestedSchema", "$schema", "type", "properties", "required", "title", "description"); err != nil {
		return err
	}
	if err := isConst(root, "type", "object"); err != nil {
		return fmt.Errorf("requestedSchema: %v", err)
	}
	if s := root.field("$schema"); s != nil {
		if s.kind != jString || (s.s != draft2020URI && s.s != draft7URI && s.s != draft7URIs) {
			return fmt.Errorf("requestedSchema: $schema: %s", schemaVersErr)
		}
	}
	for _, k := range []string{"title", "description"} {
		if v := root.field(k); v != nil && v.kind != jString {
			return fmt.Errorf("requestedSchema: %s must be a string", k)
		}
	}
	props := root.field("properties")
	if props == nil || props.kind != jObject {
		return errors.New(`requestedSchema: "properties" must be an object`)
	}
	if len(props.keys) > maxElicitProperties {
		return fmt.Errorf("requestedSchema: %d properties, more than the limit of %d", len(props.keys), maxElicitProperties)
	}
	c := &checker{} // counts the properties' patterns together
	for i, name := range props.keys {
		if err := checkElicitProperty(c, props.vals[i]); err != nil {
			return fmt.Errorf("requestedSchema: property %q: %v", name, err)
		}
	}
	if req := root.field("required"); req != nil {
		if req.kind != jArray {
			return errors.New(`requestedSchema: "required" must be an array of property names`)
		}
		for _, e := range req.elems {
			if e.kind != jString || props.field(e.s) == nil {
				return errors.New(`requestedSchema: "required" must list names of its properties`)
			}
		}
	}
	return nil
}

// checkElicitProperty checks one PrimitiveSchemaDefinition.
func checkElicitProperty(c *checker, p *jval) error {
	if p.kind != jObject {
		return errors.New("must be an object")
	}
	typ := p.field("type")
	if typ == nil || typ.kind != jString {
		return errors.New(`"type" must be "string", "number", "integer", "boolean" or "array"`)
	}
	common := []string{"type", "title", "description", "default"}
	var err error
	switch typ.s {
	case "string":
		switch {
		case p.field("enum") != nil:
			err = members(p, "an enum", append(common, "enum", "enumNames")...)
			if err == nil {
				err = stringList(p, "enum", true)
			}
			if err == nil && p.field("enumNames") != nil {
				err = stringList(p, "enumNames", false)
				if err == nil && len(p.field("enumNames").elems) != len(p.field("enum").elems) {
					err = errors.New(`"enumNames" must name every value of "enum"`)
				}
			}
		case p.field("oneOf") != nil:
			err = members(p, "an enum", append(common, "oneOf")...)
			if err == nil {
				err = titledOptions(p.field("oneOf"))
			}
		default:
			err = members(p, "a string", append(common, "minLength", "maxLength", "format", "pattern")...)
			if err == nil {
				err = natural(p, "minLength", "maxLength")
			}
			if f := p.field("format"); err == nil && f != nil {
				switch {
				case f.kind != jString:
					err = errors.New(`"format" must be a string`)
				case f.s != "email" && f.s != "uri" && f.s != "date" && f.s != "date-time":
					err = fmt.Errorf(`"format" %q is not email, uri, date or date-time`, f.s)
				}
			}
			if pat := p.field("pattern"); err == nil && pat != nil {
				if pat.kind != jString {
					err = errors.New(`"pattern" must be a string`)
				} else {
					_, err = c.regexp(`"pattern"`, pat.s)
				}
			}
		}
		if err == nil {
			err = isKind(p, "default", jString)
		}
	case "number", "integer":
		err = members(p, "a number", append(common, "minimum", "maximum")...)
		for _, k := range []string{"minimum", "maximum", "default"} {
			if err == nil {
				err = isKind(p, k, jNumber)
			}
		}
	case "boolean":
		err = members(p, "a boolean", common...)
		if err == nil {
			err = isKind(p, "default", jBool)
		}
	case "array":
		err = members(p, "a multi-select enum", append(common, "minItems", "maxItems", "items")...)
		if err == nil {
			err = natural(p, "minItems", "maxItems")
		}
		if err == nil {
			err = selectItems(p.field("items"))
		}
		if d := p.field("default"); err == nil && d != nil {
			err = stringList(p, "default", false)
		}
	default:
		err = fmt.Errorf(`"type" %q is not "string", "number", "integer", "boolean" or "array"`, typ.s)
	}
	if err != nil {
		return err
	}
	for _, k := range []string{"title", "description"} {
		if err := isKind(p, k, jString); err != nil {
			return err
		}
	}
	return nil
}

// selectItems checks the items of a multi-select enum.
func selectItems(items *jval) error {
	if items == nil || items.kind != jObject {
		return errors.New(`"items" must be {"type":"string","enum":[…]} or {"anyOf":[{"const":…,"title":…}…]}`)
	}
	if items.field("anyOf") != nil {
		if err := members(items, "items", "anyOf"); err != nil {
			return err
		}
		return titledOptions(items.field("anyOf"))
	}
	if err := members(items, "items", "type", "enum"); err != nil {
		return err
	}
	if err := isConst(items, "type", "string"); err != nil {
		return fmt.Errorf("items: %v", err)
	}
	return stringList(items, "enum", true)
}

// titledOptions checks the options of a titled enum: [{"const":s,"title":s}…].
func titledOptions(opts *jval) error {
	if opts.kind != jArray || len(opts.elems) == 0 || len(opts.elems) > maxElicitOptions {
		return fmt.Errorf("the options must be an array of 1 to %d {\"const\":…,\"title\":…}", maxElicitOptions)
	}
	for _, o := range opts.elems {
		if o.kind != jObject {
			return errors.New(`each option must be {"const":…,"title":…}`)
		}
		if err := members(o, "an option", "const", "title"); err != nil {
			return err
		}
		for _, k := range []string{"const", "title"} {
			if v := o.field(k); v == nil || v.kind != jString {
				return fmt.Errorf("an option's %q must be a string", k)
			}
		}
	}
	return nil
}

// members refuses members of object v other than allowed; what names v.
func members(v *jval, what string, allowed ...string) error {
	if v.kind != jObject {
		return fmt.Errorf("%s must be an object", what)
	}
	for _, k := range v.keys {
		ok := false
		for _, a := range allowed {
			ok = ok || k == a
		}
		if !ok {
			return fmt.Errorf("%s may not have %q (allowed: %s)", what, k, strings.Join(allowed, ", "))
		}
	}
	return nil
}

// isConst checks that member k of v is the string want.
func isConst(v *jval, k, want string) error {
	if f := v.field(k); f == nil || f.kind != jString || f.s != want {
		return fmt.Errorf("%q must be %q", k, want)
	}
	return nil
}

// isKind checks that member k of v, when present, is of the kind want.
func isKind(v *jval, k string, want jkind) error {
	if f := v.field(k); f != nil && f.kind != want {
		return fmt.Errorf("%q must be %s", k, map[jkind]string{jString: "a string", jNumber: "a number", jBool: "a boolean"}[want])
	}
	return nil
}

// natural checks that the members keys of v, when present, are
// non-negative integers.
func natural(v *jval, keys ...string) error {
	for _, k := range keys {
		f := v.field(k)
		if f == nil {
			continue
		}
		var n json.Number
		if f.kind == jNumber {
			n = json.Number(f.s)
		}
		if i, err := n.Int64(); err != nil || i < 0 || i > math.MaxInt32 {
			return fmt.Errorf("%q must be a non-negative integer", k)
		}
	}
	return nil
}

// stringList checks that member k of v is an array of at most
// maxElicitOptions strings (at least one when nonEmpty).
func stringList(v *jval, k string, nonEmpty bool) error {
	f := v.field(k)
	if f == nil || f.kind != jArray || len(f.elems) > maxElicitOptions || (nonEmpty && len(f.elems) == 0) {
		return fmt.Errorf("%q must be an array of at most %d strings", k, maxElicitOptions)
	}
	for _, e := range f.elems {
		if e.kind != jString {
			return fmt.Errorf("%q must be an array of strings", k)
		}
	}
	return nil
}
