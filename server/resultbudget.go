package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/httptools/httptools/trim"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Result budgets: what a model is handed of a tool's answer. An MCP
// result's text is at most the call's budget in characters (a service
// default, a tenant's, a tool's: ResultBudgets); an answer over it is
// shrunk by its structure (package trim: first items of long arrays, long
// strings cut with their length, depth kept), a notice says what was left
// out, in a text block and in _meta["httptools/truncated"], and the whole
// answer is kept for ResultKeep, readable by the same key only as the
// resource the result links (resources/read, in pages of the budget;
// GET /v1/results/{id} over REST). The bytes kept are drawn on the memory
// budget; when it has no room the answer is not kept, and the notice says
// so. A binary answer over the budget becomes the link alone: an image is
// never cut.

// DefaultResultBudget is the characters of text an MCP result gives a
// model unless the operator says otherwise: 40,000, about 10,000 tokens —
// the size at which widely used MCP clients start warning (and 2.5 times
// under the 25,000 tokens at which one replaces the result with a file).
const DefaultResultBudget = 40000

// MinResultBudget is the smallest budget: room for the boundary, the
// notice and a useful part of the answer.
const MinResultBudget = 2000

// DefaultResultKeep is how long a cut answer's whole stays readable.
const DefaultResultKeep = 15 * time.Minute

// noticeRoom is the characters kept for the notice; the frame's are
// counted from the tool's name.
const noticeRoom = 900

// ResultBudgets says how many characters of text an MCP result may give a
// model: Default for every call (0: DefaultResultBudget; < 0: no budget),
// overridden per tenant and per tool id (a tool's wins; < 0: none).
type ResultBudgets struct {
	Default int
	Tenants map[string]int
	Tools   map[string]int
}

// of is the budget of a call of tool for tenant, 0 for none.
func (b ResultBudgets) of(tenant, tool string) int {
	n, ok := b.Tools[tool]
	if !ok {
		n, ok = b.Tenants[tenant]
	}
	if !ok {
		n = b.Default
		if n == 0 {
			n = DefaultResultBudget
		}
	}
	if n < 0 {
		return 0
	}
	return max(n, MinResultBudget)
}

// resultCut is what a result's notice says: the budget, the whole
// answer's size, what was left out and where the whole is.
type resultCut struct {
	Budget   int        `json:"budget"`
	Chars    int        `json:"chars"`
	Cuts     []trim.Cut `json:"cuts,omitempty"`
	CutCount int        `json:"cutCount"`
	URI      string     `json:"uri,omitempty"`
	Path     string     `json:"path,omitempty"` // the same over REST
	Pages    int        `json:"pages,omitempty"`
	Expires  string     `json:"expires,omitempty"`
	NotKept  string     `json:"notKept,omitempty"`
	media    string
}

// TruncatedMeta is the _meta member of a result cut to its budget.
const TruncatedMeta = "httptools/truncated"

// fitResult cuts r to the budget of its call, keeping the whole for the
// caller of ctx. A result within it, an error or a question is r as it is.
func (s *Server) fitResult(ctx context.Context, r mcpResult, tenant string) mcpResult {
	n := s.cfg.ResultBudgets.of(tenant, r.tool)
	if n == 0 || r.isError || r.ask != nil || r.output == nil {
		return r
	}
	// Most answers are far within the budget: that is decided from the
	// length alone, before a frame is built or a rune counted, on every
	// call's path. A byte of the output is at most 3 characters of the
	// text (a 2-byte NEL is escaped in 6), and the frame is under 256
	// characters beside the tool's name and its marker twice.
	if r.media == "" && 3*len(r.output)+len(r.tool)+2*len(r.marker)+256 <= n {
		return r
	}
	frame := 0
	if r.outside {
		frame = len(frameOutside(r.tool, r.marker, ""))
	}
	out, c, err := s.cutAnswer(ctx, tenant, r.output, r.media, n, frame, r.outside)
	if err != nil {
		return mcpResult{errText: err.Error(), isError: true, tool: r.tool}
	}
	if c != nil {
		r.output, r.cut = out, c
	}
	return r
}

// textChars is how many characters output is as the text a model reads:
// inside the outside-data boundary, each line separator is written as a
// six-character escape (escapeLineSeparators).
func textChars(output []byte, outside bool) int {
	n := utf8.RuneCount(output)
	if outside {
		for _, sep := range [...]string{"\u2028", "\u2029", "\u0085"} {
			n += 5 * bytes.Count(output, []byte(sep))
		}
	}
	return n
}

// cutAnswer cuts output (of media type media, "" for JSON) to n characters
// less frame (outside: framed as outside data), keeping the whole for the
// caller of ctx; a nil cut when it fits. A media answer over n is cut to
// "": its bytes are the link's.
func (s *Server) cutAnswer(ctx context.Context, tenant string, output []byte, media string, n, frame int, outside bool) ([]byte, *resultCut, error) {
	chars := textChars(output, outside)
	if media == "" && frame+chars <= n || media != "" && len(output) <= n {
		return output, nil, nil // a media block is not text: within the budget it goes whole
	}
	c := &resultCut{Budget: n, Chars: chars, media: media}
	whole := output
	if media == "" {
		// trim.Fit counts bytes; the escapes of line separators make more
		// characters than bytes: fitted again, smaller, until the text fits.
		room := n - frame - noticeRoom
		for size := room; ; {
			fit, err := trim.Fit(whole, size)
			if err != nil {
				return nil, nil, errors.New("the answer could not be cut to the result budget: " + err.Error())
			}
			output, c.Cuts, c.CutCount = fit.JSON, fit.Cuts, fit.CutCount
			over := textChars(output, outside) - room
			if over <= 0 {
				break
			}
			size -= over
		}
	} else {
		output = []byte(`""`) // the bytes are the link's, not structuredContent's
	}
	e := heldResult{owner: owner(tenant, keyOf(ctx)), body: whole, media: media, size: n}
	id, expires, err := s.held.keep(s.cfg.Budget, s.resultKeep(), e)
	if err == nil && s.cfg.Results != nil {
		// For the other replicas: a read may reach any of them.
		if perr := s.cfg.Results.PutResult(ctx, id, e.owner, media, n, whole, expires); perr != nil {
			s.cfg.Logger.Warn("a cut answer is kept on this replica only: the store refused it", "error", perr.Error())
		}
	}
	if err != nil {
		c.NotKept = err.Error()
	} else {
		c.URI, c.Path, c.Expires = resultURI(id), "/v1/results/"+id, expires.UTC().Format(time.RFC3339)
		if media == "" {
			c.Pages = pages(len(whole), n)
		}
	}
	return output, c, nil
}

func (s *Server) resultKeep() time.Duration {
	if s.cfg.ResultKeep > 0 {
		return s.cfg.ResultKeep
	}
	return DefaultResultKeep
}

// pages is how many pages of size bytes a text of n bytes reads in.
func pages(n, size int) int { return max(1, (n+size-1)/size) }

// resultURI is the resource of a kept answer.
func resultURI(id string) string { return "httptools://results/" + id }

// notice is the text block that says what the result left out.
func (c *resultCut) notice(tool string) string {
	var b strings.Builder
	if c.media != "" {
		fmt.Fprintf(&b, "[httptools] The answer of %s is %s of %d bytes, over this call's result budget of %d characters: it is not included.", tool, c.media, c.Chars, c.Budget)
	} else {
		fmt.Fprintf(&b, "[httptools] The answer of %s was cut to fit this call's result budget of %d characters; the whole is %d characters.", tool, c.Budget, c.Chars)
		lists := 0
		for _, k := range c.Cuts {
			if k.Kind == "string" {
				continue
			}
			if lists < 3 {
				fmt.Fprintf(&b, " %s keeps %d of its %d items.", pointerName(k.Path), k.Kept, k.Total)
			}
			lists++
		}
		if other := c.CutCount - min(lists, 3); other > 0 {
			fmt.Fprintf(&b, " %d other arrays, objects or strings were cut (long strings end with their length).", other)
		}
	}
	if c.URI != "" {
		fmt.Fprintf(&b, " The whole answer is the resource %s (resources/read; %d page(s), ?page=N) until %s, for this caller only.", c.URI, max(c.Pages, 1), c.Expires)
	} else {
		fmt.Fprintf(&b, " The whole answer was not kept (%s): narrow the call (filters, page size) to get less.", c.NotKept)
	}
	return b.String()
}

// pointerName is a JSON Pointer for the notice: "the answer" for the root.
func pointerName(p string) string {
	if p == "" {
		return "The answer"
	}
	return "The array or object at " + p
}

// link is the resource_link block of a kept answer.
func (c *resultCut) link(tool string) *mcp.ResourceLink {
	mt := c.media
	if mt == "" {
		mt = "application/json"
	}
	return &mcp.ResourceLink{URI: c.URI, Name: tool + " answer", MIMEType: mt, Description: "The whole answer of " + tool + ", kept until " + c.Expires + "."}
}

// metaJSON is the _meta member's value.
func (c *resultCut) metaJSON() json.RawMessage {
	b, _ := json.Marshal(c)
	return b
}

// resultTemplate is the resource template of kept answers.
const resultTemplate = "httptools://results/{id}{?page}"

// addResultResources lets srv's clients read the answers kept for them.
// tenant is the stdio server's ("" on HTTP: the request's key says).
func (s *Server) addResultResources(srv *mcp.Server, tenant string) {
	srv.AddResourceTemplate(&mcp.ResourceTemplate{
		Name: "results", URITemplate: resultTemplate, MIMEType: "application/json",
		Description: "The whole answer of a tool call whose result was cut to its budget (the result links it), for the caller that made the call, for a while.",
	}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return s.readResult(ctx, tenant, req.Params.URI)
	})
}

// readResult reads a kept answer's page for the caller of ctx.
func (s *Server) readResult(ctx context.Context, tenant, uri string) (*mcp.ReadResourceResult, error) {
	rest, ok := strings.CutPrefix(uri, "httptools://results/")
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	id, query, _ := strings.Cut(rest, "?")
	p := 1
	if v, ok := strings.CutPrefix(query, "page="); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		p = n
	}
	key := keyOf(ctx)
	if tenant == "" && key != nil {
		tenant = key.Tenant
	}
	e, ok := s.keptResult(ctx, owner(tenant, key), id)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri) // never kept, expired, or another caller's: the same answer
	}
	if e.media != "" {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: e.media, Blob: decodedMedia(e.body)}}}, nil
	}
	text, n, ok := e.page(p, e.size)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	c := &mcp.ResourceContents{URI: uri, MIMEType: "application/json", Text: text,
		Meta: mcp.Meta{"httptools/page": map[string]any{"page": p, "pages": n}}}
	if p < n {
		c.Meta["httptools/page"].(map[string]any)["next"] = resultURI(id) + "?page=" + strconv.Itoa(p+1)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
}

// cutContent is the content of a cut result: the part of the answer that
// fits (its text, inside the boundary when outside data; for a media
// answer, nothing), the notice, and the link to the whole when it was
// kept.
func (r mcpResult) cutContent() []mcp.Content {
	var out []mcp.Content
	if r.media == "" {
		out = append(out, &mcp.TextContent{Text: r.text()})
	}
	out = append(out, &mcp.TextContent{Text: r.cut.notice(r.tool)})
	if r.cut.URI != "" {
		out = append(out, r.cut.link(r.tool))
	}
	return out
}

// appendCutMeta appends the _meta member of a cut result for the fast path,
// with the server's identity under 2026-07-28 as the SDK adds it.
func (r mcpResult) appendCutMeta(out []byte, modern bool) []byte {
	m := r.meta()
	if modern {
		m["io.modelcontextprotocol/serverInfo"] = mcpImplementation()
	}
	b, _ := json.Marshal(m)
	out = append(out, `"_meta":`...)
	out = append(out, b...)
	return append(out, ',')
}

// restBudget is the budget an invoke asked for with ?budget= (a number of
// characters, or "model" for the one an MCP call of it would have), 0 for
// none: REST callers get the whole answer unless they ask. false when it
// answered a bad value.
func (s *Server) restBudget(w http.ResponseWriter, r *http.Request, tenant, tool string) (int, bool) {
	v := r.URL.Query().Get("budget")
	switch v {
	case "":
		return 0, true
	case "model":
		return s.cfg.ResultBudgets.of(tenant, tool), true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		writeError(w, http.StatusBadRequest, "bad-request", "", fmt.Sprintf(`budget=%q: want a number of characters (at least %d) or "model" for the MCP result budget`, v, MinResultBudget))
		return 0, false
	}
	return max(n, MinResultBudget), true
}

// getResult answers GET /v1/results/{id}: the whole of an answer cut to
// its budget, for the key that made the call, with its media type.
func (s *Server) getResult(w http.ResponseWriter, r *http.Request) {
	k := identity(r.Context())
	e, ok := s.keptResult(r.Context(), owner(k.Tenant, keyOf(r.Context())), r.PathValue("id"))
	if !ok {
		writeError(w, http.StatusNotFound, "not-found", "", "no kept answer "+r.PathValue("id")+" for this key: it expired, or it is another key's")
		return
	}
	body, ct := e.body, "application/json"
	if e.media != "" {
		body, ct = decodedMedia(e.body), e.media
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Write(body)
}
