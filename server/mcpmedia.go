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

// content is the result's content: its text, or its media block.
func (r mcpResult) content() []mcp.Content {
	if r.media == "" || r.isError {
		return []mcp.Content{&mcp.TextContent{Text: r.text()}}
	}
	var b64 string
	if jsontext.Value(r.output).Kind() == '"' {
		v, _ := jsontext.AppendUnquote(nil, r.output)
		b64 = string(v)
	}
	data, _ := base64.StdEncoding.DecodeString(b64)
	switch mediaKind(r.media) {
	case "image":
		return []mcp.Content{&mcp.ImageContent{MIMEType: r.media, Data: data}}
	case "audio":
		return []mcp.Content{&mcp.AudioContent{MIMEType: r.media, Data: data}}
	}
	return []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: mediaURI(r.tool), MIMEType: r.media, Blob: data}}}
}

// appendMediaContent appends the content member of a media result as the
// SDK writes it (content()), for the fast path: the output's JSON string is
// the data as written.
func (r mcpResult) appendMediaContent(out []byte) []byte {
	kind := mediaKind(r.media)
	if kind == "resource" {
		out = append(out, `"content":[{"type":"resource","resource":{"uri":`...)
		out, _ = jsontext.AppendQuote(out, mediaURI(r.tool))
		out = append(out, `,"mimeType":`...)
		out, _ = jsontext.AppendQuote(out, r.media)
		if string(r.output) != `""` { // the SDK leaves an empty blob out
			out = append(out, `,"blob":`...)
			out = append(out, r.output...)
		}
		return append(out, "}}]"...)
	}
	out = append(out, `"content":[{"type":"`+kind+`","mimeType":`...)
	out, _ = jsontext.AppendQuote(out, r.media)
	out = append(out, `,"data":`...)
	out = append(out, r.output...)
	return append(out, "}]"...)
}
