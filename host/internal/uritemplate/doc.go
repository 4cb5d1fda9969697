// Package uritemplate matches URIs against the RFC 6570 templates modules
// declare for their resources: it compiles a template (parsed and bounded
// by abi.ParseTemplate, the one parser) to a regular expression of Go's
// regexp package, whose matching takes time linear in the URI whatever the
// template, and returns the values of the template's variables,
// percent-decoded. A template's match is the inverse of its expansion for
// the templates MCP servers write; it does not expand templates.
package uritemplate
