package openapi

import (
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/httptools/httptools/httpspec"
)

// Answers: the 2xx become successStatus and the output.

// responses sets successStatus, output and parseJson from the 2xx answers.
// An answer that is binary (a file, an image) imports too: the runtime
// returns its bytes as base64 with their media type (an MCP image, audio or
// resource block), so the output says so and the description names the type.
func (im *importer) responses(method, path string, op *openapi3.Operation, t *tool, spec *httpspec.Spec) error {
	t.Output = map[string]any{}
	if op.Responses == nil {
		return nil
	}
	var codes []int
	var first *openapi3.Response
	firstCode := 1000
	resps := op.Responses.Map()
	for _, code := range sortedKeys(resps) { // in order: 200 is taken before an equal 2XX, every run
		r := resps[code]
		lo, hi := 0, 0
		switch {
		case strings.EqualFold(code, "2XX"):
			lo, hi = 200, 299
		default:
			n, err := strconv.Atoi(code)
			if err != nil || n < 200 || n > 299 {
				continue
			}
			lo, hi = n, n
		}
		codes = append(codes, lo, hi)
		if lo < firstCode && r != nil && r.Value != nil {
			firstCode, first = lo, r.Value
		}
	}
	if len(codes) > 0 {
		lo, hi := slices.Min(codes), slices.Max(codes)
		if lo != 200 || hi != 299 {
			spec.SuccessStatus = &httpspec.StatusRange{Min: lo, Max: hi}
		}
	}
	if first == nil || len(first.Content) == 0 {
		return nil
	}
	if _, mt := jsonContent(first.Content); mt != nil {
		out := newConverter(im.aliases)
		t.Output = out.attach(out.resolved(mt.Schema))
		if c := out.cuts("output"); c != "" {
			im.warn(method, path, op, "to keep the tool readable, "+c)
		}
		for _, n := range out.notes {
			im.warn(method, path, op, "output: "+n)
		}
		return nil
	}
	for k := range first.Content {
		if strings.HasPrefix(k, "text/") || strings.Contains(k, "xml") || k == "*/*" {
			spec.ParseJSON = new(bool)
			t.Output = map[string]any{"type": "string"}
			return nil
		}
	}
	binaryAnswer(t, spec, sortedKeys(first.Content))
	return nil
}

// binaryAnswer makes a tool of an operation answering bytes: parseJson off
// (the runtime passes a binary answer through whatever it says, and an
// upstream that answers text after all gives a string rather than a JSON
// error), an output that is the bytes' base64 text of the first listed
// type, and a description line naming the types, so a model knows it gets
// a file.
func binaryAnswer(t *tool, spec *httpspec.Spec, types []string) {
	spec.ParseJSON = new(bool)
	// A content key that is no media type ("string", "undefined": real
	// descriptions have them) is not named: it would tell the model a lie.
	types = slices.DeleteFunc(slices.Clone(types), func(k string) bool { return !strings.Contains(k, "/") })
	out := map[string]any{"type": "string", "contentEncoding": "base64"}
	if len(types) > 0 && !strings.Contains(types[0], "*") {
		out["contentMediaType"] = types[0]
	}
	t.Output = out
	line := "The answer is a file."
	if len(types) > 0 {
		line = "The answer is a file of type " + strings.Join(types, " or ") + "."
	}
	t.Description = cut(t.Description, maxDescription-len(line)-2) + "\n\n" + line // the line survives a long description
}
