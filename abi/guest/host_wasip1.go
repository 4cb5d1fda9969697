//go:build wasip1

package guest

import "unsafe"

// The host functions of ABI v1 (module "wasmtask_v1", see ABI.md section 5).
// A Go string parameter is passed as two i32: pointer and length.

//go:wasmimport wasmtask_v1 progress
//go:noescape
func hostProgress(progress, total float64, msg string)

//go:wasmimport wasmtask_v1 status
//go:noescape
func hostStatus(msg string)

//go:wasmimport wasmtask_v1 log
//go:noescape
func hostLog(level int32, msg string)

//go:wasmimport wasmtask_v1 elicit
//go:noescape
func hostElicit(req string) int32

//go:wasmimport wasmtask_v1 reply
//go:noescape
func hostReply(buf unsafe.Pointer, bufCap int32) int32

//go:wasmimport wasmtask_v1 elicit_all
//go:noescape
func hostElicitAll(req string) int32

//go:wasmimport wasmtask_v1 begin_task
func hostBeginTask() int32

//go:wasmimport wasmtask_v1 sample
//go:noescape
func hostSample(req string) int32

//go:wasmimport wasmtask_v1 roots
func hostRoots() int32

// wasmHost calls the imports of the host.
type wasmHost struct{}

func (wasmHost) progress(done, total float64, msg string) { hostProgress(done, total, msg) }
func (wasmHost) status(msg string)                        { hostStatus(msg) }
func (wasmHost) log(level int32, msg string) bool         { hostLog(level, msg); return true }

func (wasmHost) elicit(req []byte) ([]byte, int32) {
	return fetchReply(hostElicit(unsafe.String(unsafe.SliceData(req), len(req))))
}

func (wasmHost) beginTask() bool { return hostBeginTask() == 1 }

func (wasmHost) elicitAll(req []byte) ([]byte, int32) {
	return fetchReply(hostElicitAll(unsafe.String(unsafe.SliceData(req), len(req))))
}

func (wasmHost) sample(req []byte) ([]byte, int32) {
	return fetchReply(hostSample(unsafe.String(unsafe.SliceData(req), len(req))))
}

func (wasmHost) roots() ([]byte, int32) { return fetchReply(hostRoots()) }

// fetchReply copies the reply of n bytes that elicit or elicit_all
// announced, or passes a negative n on.
func fetchReply(n int32) ([]byte, int32) {
	if n < 0 {
		return nil, n
	}
	buf := make([]byte, n+1) // never empty, so the pointer is valid
	m := hostReply(unsafe.Pointer(unsafe.SliceData(buf)), n)
	if m < 0 || m > n {
		m = 0
	}
	return buf[:m], 0
}
