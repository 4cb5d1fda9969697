//go:build !wasip1

package guest

import "github.com/wasmtask/wasmtask/abi"

// wasmHost stands in for the host functions outside wasip1, so that the
// package compiles and its pure parts can be tested anywhere: progress and
// status are dropped, logs go to the Call's stderr, elicitation is
// unsupported.
type wasmHost struct{}

func (wasmHost) progress(done, total float64, msg string) {}
func (wasmHost) status(msg string)                        {}
func (wasmHost) log(level int32, msg string) bool         { return false }
func (wasmHost) elicit(req []byte) ([]byte, int32)        { return nil, abi.ElicitUnsupported }
func (wasmHost) elicitAll(req []byte) ([]byte, int32)     { return nil, abi.ElicitUnsupported }
func (wasmHost) beginTask() bool                          { return false }
func (wasmHost) sample(req []byte) ([]byte, int32)        { return nil, abi.ElicitUnsupported }
func (wasmHost) roots() ([]byte, int32)                   { return nil, abi.ElicitUnsupported }
