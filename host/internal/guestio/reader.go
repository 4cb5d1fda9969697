package guestio

import "io"

// Reader is a reader that fails once Ctx is done (stdin, and the guest's
// random source: random_get fills a buffer of the guest's chosen size, so
// it is filled in chunks with the context checked between them).
type Reader struct {
	Ctx interface{ Err() error } // the call's context, or what reads it
	R   io.Reader
}

const readChunk = 64 << 10

func (c Reader) Read(p []byte) (int, error) {
	if c.Ctx.Err() != nil {
		return 0, ErrCallOver
	}
	if len(p) > readChunk {
		p = p[:readChunk]
	}
	return c.R.Read(p)
}
