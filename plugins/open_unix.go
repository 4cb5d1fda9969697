//go:build unix

package plugins

import "syscall"

// openFlags makes opening a FIFO that replaced a module file return at once
// instead of blocking the scan.
const openFlags = syscall.O_NONBLOCK
