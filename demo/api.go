// Package demo is the demo API that lets a newcomer's first call succeed
// on a machine with no network: a tiny notes service that httptools
// serves to itself, in memory, for the tools of fixtures/tools/demo. It is
// a demo, not a product: one list of notes for every tenant, kept until
// the process ends, at most MaxNotes of them.
package demo

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MaxNotes bounds the demo's memory: a note past it is refused with 507.
const MaxNotes = 1000

// API is the demo API's handler and its state.
type API struct {
	requests atomic.Int64
	mu       sync.Mutex
	notes    []Note
	mux      *http.ServeMux
}

// Note is one note of the demo API.
type Note struct {
	ID      string    `json:"id"`
	Text    string    `json:"text"`
	Created time.Time `json:"created"`
}

// NewAPI returns an empty demo API.
func NewAPI() *API {
	a := &API{mux: http.NewServeMux()}
	a.mux.HandleFunc("GET /hello", a.hello)
	a.mux.HandleFunc("GET /notes", a.list)
	a.mux.HandleFunc("POST /notes", a.create)
	return a
}

// Requests is how many requests the API has answered.
func (a *API) Requests() int64 { return a.requests.Load() }

// ServeHTTP answers one request.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.requests.Add(1)
	w.Header().Set("X-Demo", "the httptools demo API, served in memory")
	a.mux.ServeHTTP(w, r)
}

func (a *API) hello(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimSpace(r.URL.Query().Get("name"))
	if name == "" {
		name = "world"
	}
	if len(name) > 100 {
		reply(w, http.StatusBadRequest, map[string]string{"error": "name: at most 100 bytes"})
		return
	}
	reply(w, http.StatusOK, map[string]string{"greeting": "Hello, " + name + "!", "from": "the httptools demo API (no network involved)"})
}

func (a *API) list(w http.ResponseWriter, _ *http.Request) {
	a.mu.Lock()
	notes := append([]Note{}, a.notes...)
	a.mu.Unlock()
	reply(w, http.StatusOK, map[string]any{"notes": notes, "count": len(notes)})
}

func (a *API) create(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Text string `json:"text"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&in); err != nil || strings.TrimSpace(in.Text) == "" {
		reply(w, http.StatusBadRequest, map[string]string{"error": `send {"text": "…"}, at most 4 KiB`})
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.notes) >= MaxNotes {
		reply(w, http.StatusInsufficientStorage, map[string]string{"error": fmt.Sprintf("the demo keeps at most %d notes: restart serve to empty it", MaxNotes)})
		return
	}
	n := Note{ID: fmt.Sprintf("n_%d", len(a.notes)+1), Text: in.Text, Created: time.Now().UTC().Truncate(time.Second)}
	a.notes = append(a.notes, n)
	reply(w, http.StatusCreated, n)
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
