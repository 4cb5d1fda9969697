// Package tenancy reads the operator's tenant file and answers who a
// request is: it parses and checks the file (JSON, or YAML turned into
// JSON, decoded strictly), verifies bearer tokens (static tokens by their
// SHA-256 digest, JWTs against a JWKS with golang-jwt and keyfunc), and
// says which tools each tenant sees. It does not enforce a tenant's
// quotas (admission, the task engine and the HTTP edge do, from the
// entries it returns) and it holds no server state: the server swaps in a
// new Auth when the file changes.
package tenancy
