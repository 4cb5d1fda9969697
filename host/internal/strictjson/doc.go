// Package strictjson decodes the operator's files (the policy, the tenant
// file) strictly, and words what is wrong for the operator: where, by line
// and column of the document the operator wrote, and what, in JSON's terms
// rather than Go's. Beyond encoding/json's DisallowUnknownFields it
// refuses a member spelled in another case than its field's (encoding/json
// would take "memoryMib" for "memoryMiB") and trailing data. Standard
// library only.
package strictjson
