package server

import (
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/tidwall/gjson"
)

// Searching a catalogue. A model that cannot read a thousand tools' list
// asks for the few it needs in plain words ("create a customer"); the
// index ranks the tools by BM25 over the words of each tool's id, its
// description and its parameters' names, so that a word that names few
// tools ("refund") counts for more than one that names many ("list").
// It is built once per tool set, on first use, and never changes.

// BM25's constants, at their usual values: k1 bounds what a word repeated
// in one tool adds, b how much a long description is discounted.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// Field weights: a word of the id says what the tool is, one of a
// parameter's name what it takes; a description's words are many and
// looser.
const (
	weightName  = 3
	weightParam = 2
	weightDesc  = 1
)

// searchIndex is the inverted index of a tool set.
type searchIndex struct {
	ids      []string             // by document number, in id order
	postings map[string][]posting // word → the tools that have it
	lens     []float64            // each tool's weighted word count
	avgLen   float64
}

type posting struct {
	doc int
	tf  float64 // weighted count of the word in the tool
}

// searchHit is one tool found, best first.
type searchHit struct {
	ID    string
	Score float64
}

// searchIndexOf is ts's index, built on first use.
func (ts *Toolset) searchIndexOf() *searchIndex {
	ts.searchOnce.Do(func() {
		docs := make([]map[string]float64, len(ts.ids))
		for i, id := range ts.ids {
			m := ts.tools[id].Manifest()
			d := map[string]float64{}
			addWords(d, id, weightName)
			addWords(d, m.Description, weightDesc)
			gjson.GetBytes(m.Input, "properties").ForEach(func(k, _ gjson.Result) bool {
				addWords(d, k.String(), weightParam)
				return true
			})
			docs[i] = d
		}
		ts.search = newSearchIndex(ts.ids, docs)
	})
	return ts.search
}

// newSearchIndex indexes docs, the weighted words of each of ids.
func newSearchIndex(ids []string, docs []map[string]float64) *searchIndex {
	x := &searchIndex{ids: ids, postings: map[string][]posting{}, lens: make([]float64, len(docs))}
	total := 0.0
	for i, d := range docs {
		for w, tf := range d {
			x.postings[w] = append(x.postings[w], posting{doc: i, tf: tf})
			x.lens[i] += tf
		}
		total += x.lens[i]
	}
	if len(docs) > 0 {
		x.avgLen = total / float64(len(docs))
	}
	return x
}

// addWords counts the words of text in d, each weight times.
func addWords(d map[string]float64, text string, weight float64) {
	for _, w := range words(text) {
		d[w] += weight
	}
}

// search ranks the tools keep allows by query, best first, at most limit
// of them. A tool no word of the query names is not found.
func (x *searchIndex) search(query string, keep func(id string) bool, limit int) []searchHit {
	scores := map[int]float64{}
	n := float64(len(x.ids))
	seen := map[string]bool{}
	for _, w := range words(query) {
		if seen[w] {
			continue
		}
		seen[w] = true
		ps := x.postings[w]
		if len(ps) == 0 {
			continue
		}
		df := float64(len(ps))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range ps {
			norm := p.tf + bm25K1*(1-bm25B+bm25B*x.lens[p.doc]/x.avgLen)
			scores[p.doc] += idf * p.tf * (bm25K1 + 1) / norm
		}
	}
	hits := make([]searchHit, 0, len(scores))
	for doc, sc := range scores {
		if keep == nil || keep(x.ids[doc]) {
			hits = append(hits, searchHit{ID: x.ids[doc], Score: sc})
		}
	}
	slices.SortFunc(hits, func(a, b searchHit) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID) // ties in id order: the same answer every time
	})
	if limit > 0 && len(hits) > limit {
		hits = hits[:limit]
	}
	return hits
}

// words are text's search words: split at anything not a letter or digit
// and between a lower-case letter and an upper-case one (listCustomers,
// customer_id), lower-cased, common words dropped, each reduced to its
// stem and an API's verbs to one of each meaning.
func words(text string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) == 0 {
			return
		}
		w := string(cur)
		cur = cur[:0]
		if stopWords[w] || len(w) > 64 {
			return
		}
		w = stem(w)
		if v, ok := verbs[w]; ok {
			w = v
		}
		out = append(out, w)
	}
	prevLower := false
	for _, r := range text {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if unicode.IsUpper(r) && prevLower {
				flush()
			}
			prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
			cur = append(cur, unicode.ToLower(r))
		default:
			flush()
			prevLower = false
		}
	}
	flush()
	return out
}

// stem takes the plural off a word (customers → customer, addresses →
// address, policies → policy): tasks and descriptions say the one and the
// other.
func stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 4 && (strings.HasSuffix(w, "sses") || strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "xes")):
		return w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:len(w)-1]
	}
	return w
}

// verbs maps the words a person uses for an API's operations to the one
// an imported tool's id uses (an operation's id says get, list, create,
// update, delete): "remove the pet" finds delete-pet.
var verbs = map[string]string{
	"fetch": "get", "retrieve": "get", "read": "get", "show": "get", "look": "get", "lookup": "get", "view": "get", "detail": "get",
	"add": "create", "new": "create", "make": "create", "register": "create", "open": "create",
	"change": "update", "modify": "update", "edit": "update", "rename": "update", "set": "update",
	"remove": "delete", "erase": "delete", "destroy": "delete", "drop": "delete",
	"find": "list", "search": "list", "every": "list", "enumerate": "list",
}

// stopWords carry no meaning of their own in a task.
var stopWords = map[string]bool{
	"a": true, "an": true, "the": true, "of": true, "to": true, "for": true, "in": true, "on": true, "by": true,
	"and": true, "or": true, "with": true, "is": true, "are": true, "be": true, "this": true, "that": true,
	"it": true, "its": true, "from": true, "as": true, "at": true, "my": true, "me": true, "i": true, "we": true,
	"our": true, "you": true, "your": true, "please": true, "want": true, "need": true, "some": true, "which": true,
	"what": true, "how": true, "all": true, "do": true, "does": true, "can": true, "into": true, "about": true,
}
