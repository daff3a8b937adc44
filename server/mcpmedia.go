package server

import (
	"encoding/base64"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool's output of a media type (synth.Result.MediaType: an upstream that
// answered bytes) is offered over MCP as the block of its kind: an image
// block for image/*, an audio block for audio/*, and for any other type an
// embedded resource whose blob is the bytes, named by mediaURI. The
// output's JSON is the bytes' base64 text, which is the blocks' data as
// the wire carries it; structuredContent stays the output, as for any.

// mediaKind is the content block type of media type mt.
func mediaKind(mt string) string {
	switch {
	case strings.HasPrefix(mt, "image/"):
		return "image"
	case strings.HasPrefix(mt, "audio/"):
		return "audio"
	}
	return "resource"
}

// mediaURI names the output of tool as an embedded resource.
func mediaURI(tool string) string { return "httptools://tools/" + tool + "/output" }

// content is the result's content: its text, or its media block — between
// the two text blocks of the outside-data boundary (mediaFrame) when the
// tool's results are outside data: an image or a document can carry
// words as well as a text can.
func (r mcpResult) content() []mcp.Content {
	if r.cut != nil {
		return r.cutContent()
	}
	if r.media == "" || r.isError {
		return []mcp.Content{&mcp.TextContent{Text: r.text()}}
	}
	block := r.mediaBlock()
	if !r.outside {
		return []mcp.Content{block}
	}
	open, end := r.mediaFrame()
	return []mcp.Content{&mcp.TextContent{Text: open}, block, &mcp.TextContent{Text: end}}
}

// mediaFrame is the opening and closing text of the boundary around a
// media block of outside data.
func (r mcpResult) mediaFrame() (open, end string) {
	what := "the " + mediaKind(r.media) + " (" + r.media + ") the tool " + r.tool + " returned from outside this system, in the next block"
	return frameOpen(what, r.marker), frameClose(r.marker)
}

// mediaBlock is the media block of a media result.
func (r mcpResult) mediaBlock() mcp.Content {
	data := decodedMedia(r.output)
	switch mediaKind(r.media) {
	case "image":
		return &mcp.ImageContent{MIMEType: r.media, Data: data}
	case "audio":
		return &mcp.AudioContent{MIMEType: r.media, Data: data}
	}
	return &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: mediaURI(r.tool), MIMEType: r.media, Blob: data}}
}

// appendMediaContent appends the content member of a media result as the
// SDK writes it (content()), for the fast path: the output's JSON string is
// the data as written.
func (r mcpResult) appendMediaContent(out []byte) []byte {
	out = append(out, `"content":[`...)
	var end string
	if r.outside {
		var open string
		open, end = r.mediaFrame()
		out = append(out, `{"type":"text","text":`...)
		out = appendQuoted(out, open)
		out = append(out, "},"...)
	}
	out = r.appendMediaBlock(out)
	if r.outside {
		out = append(out, `,{"type":"text","text":`...)
		out = appendQuoted(out, end)
		out = append(out, '}')
	}
	return append(out, ']')
}

// appendMediaBlock appends the media block as the SDK writes it.
func (r mcpResult) appendMediaBlock(out []byte) []byte {
	kind := mediaKind(r.media)
	if kind == "resource" {
		out = append(out, `{"type":"resource","resource":{"uri":`...)
		out, _ = jsontext.AppendQuote(out, mediaURI(r.tool))
		out = append(out, `,"mimeType":`...)
		out, _ = jsontext.AppendQuote(out, r.media)
		if string(r.output) != `""` { // the SDK leaves an empty blob out
			out = append(out, `,"blob":`...)
			out = append(out, r.output...)
		}
		return append(out, "}}"...)
	}
	out = append(out, `{"type":"`+kind+`","mimeType":`...)
	out, _ = jsontext.AppendQuote(out, r.media)
	out = append(out, `,"data":`...)
	out = append(out, r.output...)
	return append(out, '}')
}

// decodedMedia is the bytes of a media output: its JSON string's base64.
func decodedMedia(output []byte) []byte {
	var b64 string
	if jsontext.Value(output).Kind() == '"' {
		v, _ := jsontext.AppendUnquote(nil, output)
		b64 = string(v)
	}
	data, _ := base64.StdEncoding.DecodeString(b64)
	return data
}
