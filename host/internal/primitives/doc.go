// Package primitives is the table of the resources, resource templates
// and prompts one generation of modules serves (ABI 1.2): built once per
// reload from the modules' manifests, in the order the server gives them,
// immutable afterwards. It decides collisions (a URI, a template or a
// prompt name declared by two modules is served by the first, and the
// others are reported), routes a read to the module that serves its URI
// (a declared resource first, then the first template that matches), and
// lists what is served in a stable order. It runs nothing: the server
// runs the module it returns, within the module's limits.
package primitives
