package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/wasmtask/wasmtask/host"
)

// runHashToken reads one bearer token (its first line) from in and prints
// the digest a tenant file stores for it: the file never holds a token.
func runHashToken(in io.Reader, out io.Writer) error {
	line, err := bufio.NewReader(io.LimitReader(in, 64<<10)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	token := strings.TrimRight(line, "\r\n")
	if token == "" {
		return errors.New("hash-token: no token on stdin (e.g. `openssl rand -hex 32 | tee token | wasmtask hash-token`)")
	}
	_, err = fmt.Fprintln(out, host.HashToken(token))
	return err
}
