package httpspec

import (
	"encoding/base64"
	"mime"
	"strings"
	"unicode/utf8"

	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/synth"
)

// An upstream that answers bytes rather than JSON or text — an image, a
// sound, a PDF — gives an output of its media type: the bytes' standard
// base64 text as a JSON string, within the tool's response cap like every
// answer. REST returns it with meta.mediaType; MCP offers it as an image,
// audio or embedded resource block.

// binaryMedia is the media type of an answer whose body is bytes, or "":
// every image, audio, video and font type; of application's, octet-stream,
// pdf and zip, and any other whose body is not UTF-8 text unless it is
// JSON or XML (a Latin-1 document stays the text path's).
func binaryMedia(contentType string, body []byte) string {
	if contentType == "" || strings.HasPrefix(contentType, "application/json") || strings.HasPrefix(contentType, "text/") {
		return "" // the common answers, without parsing
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ""
	}
	top, sub, _ := strings.Cut(mt, "/")
	switch top {
	case "image", "audio", "video", "font":
		return mt
	case "application":
		switch {
		case sub == "octet-stream" || sub == "pdf" || sub == "zip":
			return mt
		case strings.Contains(sub, "json") || strings.Contains(sub, "xml"):
			return ""
		case !utf8.Valid(body):
			return mt
		}
	}
	return ""
}

// streamsType says an answer of this Content-Type may be streamed as JSON:
// one of a binary media type (as far as its type says) is read whole.
func streamsType(contentType string) bool { return binaryMedia(contentType, nil) == "" }

// mediaOutput is the output of a binary answer of media type mt.
func mediaOutput(resp *fetch.Response, mt string) *synth.Output {
	b := make([]byte, 0, base64.StdEncoding.EncodedLen(len(resp.Body))+2)
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, resp.Body)
	b = append(b, '"')
	return &synth.Output{Status: resp.Status, Attempts: resp.Attempts, JSON: b, MediaType: mt}
}
