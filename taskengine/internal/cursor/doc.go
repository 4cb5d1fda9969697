// Package cursor makes opaque paging cursors bound to an owner: a
// position sealed so that it cannot be forged, read by another owner, or
// used to learn how many positions others hold.
package cursor
