//go:build !unix

package plugins

const openFlags = 0
