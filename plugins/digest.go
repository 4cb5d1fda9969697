package plugins

import (
	"crypto/sha256"
	"encoding/hex"
)

// digestPrefix names the hash of a content digest.
const digestPrefix = "sha256:"

// Digest returns the content digest of b in the one form wasmtask writes
// digests: "sha256:" followed by the 64 lower-case hex digits of b's
// SHA-256. [Module.Digest] has this form.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return formatDigest(sum[:])
}

// formatDigest writes a SHA-256 sum in [Digest]'s form. The scanner hashes
// files as a stream, so it has the sum, not the bytes.
func formatDigest(sum []byte) string {
	return digestPrefix + hex.EncodeToString(sum)
}

// shortDigest is how problems show a digest: the prefix and the first 12
// hex digits.
func shortDigest(d string) string {
	if n := len(digestPrefix) + 12; len(d) > n {
		return d[:n]
	}
	return d
}
