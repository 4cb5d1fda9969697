// Package guestevents bounds what one call of a guest sends its client
// while it runs: progress, status and log notifications pass through a
// token bucket (a burst, then a steady rate), progress only moves forward,
// reports that find no token are coalesced or counted, and one warning
// at the end says how many were dropped. It is the abi.Events the
// runtime's host functions and the guest's stderr reach; it knows nothing
// of Wasm or of MCP.
package guestevents
