package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
)

// tools/list on the fast path. An MCP client lists on every connect, and
// a catalogue of a thousand tools (one imported API) is ordinary: the SDK
// answers each list by encoding every tool again. serveMCPList answers a
// stateless tools/list as the SDK does — the same pages (sorted by name,
// mcp.DefaultPageSize a page, the SDK's cursors), each filtered by the
// caller's policy after paging, as mcpPolicy filters the SDK's — from
// bytes encoded once: each tool's JSON once per tool set, and each page
// once per tool set, cursor and policy view (which tools of the page the
// caller may see).

// listPageSize is the page size of the SDK server at the HTTP door
// (httpMCPOptions sets it), which the fast path pages by.
const listPageSize = mcp.DefaultPageSize

// listCursors are the SDK's own cursors of a tool set's page boundaries,
// asked of the SDK (sdkCursors) rather than encoded here: its cursor is a
// private type's gob encoding, which an SDK release may change. The fast
// path gives out only these and reads only these; any other cursor (one
// of another replica's, a forged one) is the SDK's to read or refuse.
type listCursors struct {
	next  map[string]string // the last tool of a page → the cursor after it
	after map[string]string // that cursor → the last tool before it
}

// sdkCursors lists the tools named last, in order, through an SDK server
// of one tool a page (and one tool after the last), in memory: the cursor
// after each page is the SDK's cursor after that name.
func sdkCursors(last []string) (listCursors, error) {
	c := listCursors{next: map[string]string{}, after: map[string]string{}}
	if len(last) == 0 {
		return c, nil
	}
	srv := mcp.NewServer(mcpImplementation(), &mcp.ServerOptions{PageSize: 1})
	noop := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil }
	for _, name := range append(slices.Clone(last), last[len(last)-1]+"0") {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, noop)
	}
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		return c, err
	}
	defer ss.Close()
	cs, err := mcp.NewClient(mcpImplementation(), nil).Connect(ctx, ct, nil)
	if err != nil {
		return c, err
	}
	defer cs.Close()
	cursor := ""
	for _, name := range last {
		res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return c, err
		}
		if len(res.Tools) != 1 || res.Tools[0].Name != name || res.NextCursor == "" {
			return c, fmt.Errorf("the SDK's page after %q is not %q", cursor, name)
		}
		cursor = res.NextCursor
		c.next[name], c.after[cursor] = cursor, name
	}
	return c, nil
}

// listCursors is the SDK's cursors of the set's page boundaries: the last
// tool of each full page (listPageSize of ts.ids).
func (ts *Toolset) listCursors() (listCursors, bool) {
	ts.cursorsOnce.Do(func() {
		var last []string
		for k := listPageSize; k < len(ts.ids); k += listPageSize {
			last = append(last, ts.ids[k-1])
		}
		var err error
		ts.cursors, err = sdkCursors(last)
		ts.cursorsOK = err == nil
	})
	return ts.cursors, ts.cursorsOK
}

// viewOf is which of ids the gate shows the caller, and a digest of that:
// callers with the same view share the encoded answer.
func viewOf(g *gate, ts *Toolset, ids []string) ([]bool, uint64) {
	seen := make([]bool, len(ids))
	h := fnv.New64a()
	var bit [1]byte
	for i, id := range ids {
		seen[i] = g.decide(ts.tools[id]).Allow
		bit[0] = 0
		if seen[i] {
			bit[0] = 1
		}
		h.Write(bit[:])
	}
	return seen, h.Sum64()
}

// listKey is a page as one caller sees it.
type listKey struct {
	ts     *Toolset
	cursor string
	view   uint64 // which tools of the page the caller sees
}

// listCache holds encoded pages: bounded, emptied when full (a new tool
// set makes the old pages unreachable anyway).
type listCache struct {
	mu    sync.Mutex
	pages map[listKey][]byte
}

const maxListPages = 256

func (c *listCache) get(k listKey) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.pages[k]
	return b, ok
}

func (c *listCache) put(k listKey, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pages == nil || len(c.pages) >= maxListPages {
		c.pages = make(map[listKey][]byte)
	}
	c.pages[k] = b
}

// mcpToolJSON is the JSON of a tool as tools/list shows it, encoded once
// per tool set.
func (ts *Toolset) mcpToolJSON(id string) []byte {
	ts.mcpJSONOnce.Do(func() {
		ts.mcpJSON = make(map[string][]byte, len(ts.ids))
		for _, tid := range ts.ids {
			b, err := json.Marshal(ts.mcpTool(tid).Tool)
			if err != nil {
				continue
			}
			ts.mcpJSON[tid] = b
			if bytes.Contains(b, []byte(`"x-mcp-header"`)) {
				if ts.mcpHeaders == nil {
					ts.mcpHeaders = map[string]bool{}
				}
				ts.mcpHeaders[tid] = true
			}
		}
	})
	return ts.mcpJSON[id]
}

// headerBound says the tool id's input schema binds an argument to a
// header (x-mcp-header), which the SDK checks on 2026-07-28 calls.
func (ts *Toolset) headerBound(id string) bool {
	ts.mcpToolJSON(id)
	return ts.mcpHeaders[id]
}

// anyHeaderBound says some tool of the set is headerBound.
func (ts *Toolset) anyHeaderBound() bool {
	ts.mcpToolJSON("")
	return len(ts.mcpHeaders) > 0
}

// serveMCPList answers a stateless tools/list (params absent, or only a
// cursor and the request's _meta) and reports true, or leaves it to the
// SDK: its params (readListParams), the caller's view (gateFor), the page
// the cursor names (listPage), that page encoded once per view
// (encodedPage), written in the request's envelope (writeList).
func (s *Server) serveMCPList(w http.ResponseWriter, r *http.Request, version string, idJSON []byte, params gjson.Result) bool {
	cursor, meta, ok := readListParams(params)
	if !ok || !modernRequest(r, version, "tools/list", "", meta) {
		return false
	}
	modern := version >= modernVersion
	ctx := r.Context()
	tenant, person := mcpCaller(ctx, r.Header)
	g, err := s.gateFor(ctx, tenant, identity(ctx), person)
	if err != nil {
		return false
	}
	ts := s.Tools()
	if s.discovering(ctx, g, ts) {
		return false // the discovery tools: the SDK's list, as mcpCatalogue changes it
	}
	if modern && ts.anyHeaderBound() {
		return false // the SDK's list leaves out tools whose bindings it refuses
	}
	page, next, ok := ts.listPage(cursor)
	if !ok {
		return false
	}
	result := s.encodedPage(g, ts, cursor, page, next)
	noteMCPList(ctx)
	s.writeList(w, idJSON, modern, result)
	return true
}

// readListParams reads a tools/list's params: absent, or an object of a
// string cursor and _meta (read by modernRequest), nothing else.
func readListParams(params gjson.Result) (cursor string, meta gjson.Result, ok bool) {
	if !params.Exists() {
		return "", meta, true
	}
	if !params.IsObject() {
		return "", meta, false
	}
	ok = true
	params.ForEach(func(k, v gjson.Result) bool {
		switch k.String() {
		case "cursor":
			ok = v.Type == gjson.String
			cursor = v.Str
		case "_meta":
			meta = v
		default:
			ok = false
		}
		return ok
	})
	return cursor, meta, ok
}

// listPage is the page of ts's tools after cursor ("" for the first), and
// the SDK's cursor after it ("" for the last page); false when cursor is
// not one the fast path gave (the SDK reads it, or refuses it) or the
// SDK's cursors are not known.
func (ts *Toolset) listPage(cursor string) (page []string, next string, ok bool) {
	cursors, ok := ts.listCursors()
	if !ok {
		return nil, "", false
	}
	after := ""
	if cursor != "" {
		if after, ok = cursors.after[cursor]; !ok {
			return nil, "", false
		}
	}
	ids := ts.ids // sorted, as the SDK sorts its tools
	start, _ := slices.BinarySearch(ids, after)
	if after != "" && start < len(ids) && ids[start] == after {
		start++
	}
	page = ids[start:]
	if len(page) > listPageSize {
		page = page[:listPageSize]
		next = cursors.next[page[len(page)-1]]
	}
	return page, next, true
}

// encodedPage is the result of a tools/list of page as the caller's gate
// g shows it, encoded once per tool set, cursor and view and kept in
// s.lists.
func (s *Server) encodedPage(g *gate, ts *Toolset, cursor string, page []string, next string) []byte {
	seen, digest := viewOf(g, ts, page)
	key := listKey{ts: ts, cursor: cursor, view: digest}
	if result, ok := s.lists.get(key); ok {
		return result
	}
	var b bytes.Buffer
	// As the SDK writes a list result: its cache hint (mcpCacheable's)
	// beside the page.
	b.WriteByte('{')
	b.Write(s.listCacheHint())
	b.WriteString(`,"tools":[`)
	n := 0
	for i, id := range page {
		if !seen[i] {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		b.Write(ts.mcpToolJSON(id))
		n++
	}
	b.WriteByte(']')
	if next != "" {
		b.WriteString(`,"nextCursor":`)
		b.WriteString(strconv.Quote(next))
	}
	b.WriteByte('}')
	s.lists.put(key, b.Bytes())
	return b.Bytes()
}

// writeList writes the response of id whose result is a cached page. The
// page is written as it is cached, never copied: only the envelope around
// it is the request's.
func (s *Server) writeList(w http.ResponseWriter, idJSON []byte, modern bool, result []byte) {
	head := make([]byte, 0, 128+len(idJSON))
	head = append(head, `{"jsonrpc":"2.0","id":`...)
	head = append(head, idJSON...)
	head = append(head, `,"result":`...)
	if modern {
		// 2026-07-28's members first, then the page's own (past its
		// opening brace).
		head = append(head, `{"resultType":"complete","_meta":{`...)
		head = append(head, serverInfoMeta()...)
		head = append(head, "},"...)
		result = result[1:]
	}
	const tail = "}\n"
	s.writeFastHead(w, http.StatusOK, len(head)+len(result)+len(tail))
	w.Write(head)
	w.Write(result)
	io.WriteString(w, tail)
}
