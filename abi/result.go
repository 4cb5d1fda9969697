package abi

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// MaxResultDepth is the most [ResultLimits.MaxDepth] may allow (objects
// and arrays, the result object itself being level 1). MCP clients parse
// what the host forwards, some of them recursively; 128 levels leave any
// real structuredContent room and no parser trouble.
const MaxResultDepth = 128

// checkContent validates one content block the way MCP clients do: a text
// block is text (possibly empty), an image or audio block carries standard
// base64 data and a media type of its own kind. When the data starts with
// a signature of a known image or audio format, the media type must name
// that format: a client that trusts mimeType would otherwise decode one
// format as another.
func checkContent(c Content) error {
	linkish := c.URI != "" || c.Name != "" || c.Title != "" || c.Description != "" || c.Size != nil
	switch c.Type {
	case "text":
		if c.Data != "" || c.MIMEType != "" || linkish || c.Resource != nil {
			return errors.New(`a text block has "text" only`)
		}
		return nil
	case "image", "audio":
		if linkish || c.Resource != nil {
			return fmt.Errorf(`an %s block has "data" and "mimeType" only`, c.Type)
		}
	case "resource_link":
		return checkLink(c)
	case "resource":
		if c.Resource == nil || c.Text != "" || c.Data != "" || c.MIMEType != "" || linkish {
			return errors.New(`a resource block has "resource" only`)
		}
		return checkContents(*c.Resource)
	default:
		return fmt.Errorf("unknown type %q (want text, image, audio, resource_link or resource)", truncateText(c.Type))
	}
	if c.Text != "" {
		return fmt.Errorf(`an %s block has "data" and "mimeType", not "text"`, c.Type)
	}
	if c.Data == "" || c.MIMEType == "" {
		return fmt.Errorf("%s needs data and mimeType", c.Type)
	}
	mt, ok := mediaType(c.MIMEType)
	if !ok {
		return fmt.Errorf("mimeType %q is not a media type", truncateText(c.MIMEType))
	}
	if !strings.HasPrefix(mt, c.Type+"/") {
		return fmt.Errorf("mimeType %q is not an %s type (want %s/…)", truncateText(c.MIMEType), c.Type, c.Type)
	}
	data, err := base64.StdEncoding.Strict().DecodeString(c.Data)
	if err != nil {
		return errors.New("data is not valid base64 (standard alphabet, padded)")
	}
	if sniffed := sniff(data); sniffed != "" && !sameFormat(mt, sniffed) {
		return fmt.Errorf("mimeType %q does not match the data, which is %s", truncateText(c.MIMEType), sniffed)
	}
	return nil
}

// checkLink validates a resource_link block: a URI and a name.
func checkLink(c Content) error {
	if c.Text != "" || c.Data != "" || c.Resource != nil {
		return errors.New(`a resource_link block has no "text", "data" or "resource"`)
	}
	if err := CheckURI(c.URI); err != nil {
		return fmt.Errorf("uri: %v", err)
	}
	if c.Size != nil && *c.Size < 0 {
		return errors.New("size is negative")
	}
	return checkDisplay(c.Name, c.Title, c.Description, c.MIMEType, nil, nil)
}

// signatures are the leading bytes of the image and audio formats whose
// media type sniff can tell. A RIFF container is told by its form type at
// offset 8.
var signatures = []struct {
	prefix, at8 string
	mediaType   string
}{
	{"\x89PNG\r\n\x1a\n", "", "image/png"},
	{"\xff\xd8\xff", "", "image/jpeg"},
	{"GIF87a", "", "image/gif"},
	{"GIF89a", "", "image/gif"},
	{"RIFF", "WEBP", "image/webp"},
	{"RIFF", "WAVE", "audio/wav"},
	{"OggS", "", "audio/ogg"},
	{"fLaC", "", "audio/flac"},
	{"ID3", "", "audio/mpeg"},
}

// sniff names the image or audio format whose signature starts data, or
// returns "" when it knows none (the media type is then trusted). Aliases
// of a format's media type (audio/x-wav, audio/wave) count as a match.
func sniff(data []byte) string {
	for _, s := range signatures {
		if strings.HasPrefix(string(data), s.prefix) &&
			(s.at8 == "" || len(data) >= 12 && string(data[8:12]) == s.at8) {
			return s.mediaType
		}
	}
	return ""
}

// sameFormat reports whether the declared media type names the sniffed
// format.
func sameFormat(declared, sniffed string) bool {
	if declared == sniffed {
		return true
	}
	switch sniffed {
	case "audio/wav":
		return declared == "audio/x-wav" || declared == "audio/wave" || declared == "audio/vnd.wave"
	case "audio/mpeg":
		return declared == "audio/mp3"
	case "audio/flac":
		return declared == "audio/x-flac"
	}
	return false
}

// mediaType returns the lower-case "type/subtype" of a media type with
// optional parameters (RFC 2045: tokens, then "; name=value" pairs of
// printable ASCII), and whether s is one. It is written here rather than
// taken from package mime, whose tables every Go guest importing abi would
// carry.
func mediaType(s string) (string, bool) {
	base, params, _ := strings.Cut(s, ";")
	base = strings.ToLower(strings.TrimSpace(base))
	typ, sub, ok := strings.Cut(base, "/")
	if !ok || !isToken(typ) || !isToken(sub) {
		return "", false
	}
	for _, r := range params {
		if r < 0x20 || r > 0x7e {
			return "", false
		}
	}
	return base, true
}

// isToken reports whether s is an RFC 2045 token.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r <= 0x20 || r >= 0x7f || strings.ContainsRune(`()<>@,;:\\"/[]?=`, r) {
			return false
		}
	}
	return true
}

// truncateText bounds a guest-provided string quoted in an error message.
func truncateText(s string) string {
	const n = 64
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
