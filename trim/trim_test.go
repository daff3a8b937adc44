package trim

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// issues is an API's list of n issues, each with a long body.
func issues(n, body int) []byte {
	type issue struct {
		Number int      `json:"number"`
		Title  string   `json:"title"`
		Body   string   `json:"body"`
		Labels []string `json:"labels"`
	}
	var v struct {
		Total  int     `json:"total"`
		Issues []issue `json:"issues"`
	}
	v.Total = n
	for i := range n {
		v.Issues = append(v.Issues, issue{Number: i + 1, Title: fmt.Sprintf("Issue %d: the list is slow", i+1), Body: strings.Repeat("é word ", body/7), Labels: []string{"bug", "p2"}})
	}
	b, _ := json.Marshal(v)
	return b
}

// TestFitKeepsShapeWithinBudget: answers of 10 KB to 10 MB shrink to at
// most the budget, stay valid JSON of the same shape (the issues array
// an array of objects with every member), and list what they left out.
func TestFitKeepsShapeWithinBudget(t *testing.T) {
	for _, c := range []struct{ n, body, max int }{
		{20, 500, 4000}, {500, 2000, 40000}, {5000, 2000, 40000}, {200, 50000, 20000}, {3, 10, 100000},
	} {
		doc := issues(c.n, c.body)
		r, err := Fit(doc, c.max)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.JSON) > c.max || !jsontext.Value(r.JSON).IsValid() {
			t.Errorf("%d issues of %d B in %d: %d bytes, valid %v", c.n, len(doc), c.max, len(r.JSON), jsontext.Value(r.JSON).IsValid())
			continue
		}
		var v struct {
			Total  int `json:"total"`
			Issues []struct {
				Number int
				Title  string
				Body   *string
				Labels []string
			} `json:"issues"`
		}
		if err := json.Unmarshal(r.JSON, &v); err != nil || v.Total != c.n || len(v.Issues) == 0 || v.Issues[0].Body == nil || v.Issues[0].Number != 1 {
			t.Errorf("%d issues: shape lost: %v %s", c.n, err, r.JSON[:min(200, len(r.JSON))])
			continue
		}
		whole := len(doc) <= c.max
		if whole != (r.CutCount == 0) {
			t.Errorf("%d issues: whole %v, %d cuts", c.n, whole, r.CutCount)
		}
		if !whole && (len(v.Issues) < c.n && !hasCut(r, "/issues", "array", len(v.Issues), c.n)) {
			t.Errorf("%d issues: kept %d, the cut not listed: %+v", c.n, len(v.Issues), r.Cuts)
		}
		t.Logf("%d issues, %d B → %d B (budget %d): %d of %d issues kept, %d cuts", c.n, len(doc), len(r.JSON), c.max, len(v.Issues), c.n, r.CutCount)
	}
}

func hasCut(r Result, path, kind string, kept, total int) bool {
	for _, c := range r.Cuts {
		if c == (Cut{Path: path, Kind: kind, Kept: kept, Total: total}) {
			return true
		}
	}
	return false
}

// TestFitNamesWhatItCut: the pointers, kinds and counts of the cuts,
// member names escaped, strings cut by characters, not bytes.
func TestFitNamesWhatItCut(t *testing.T) {
	doc := `{"a/b":{"x~":["` + strings.Repeat("ü", 3000) + `"]},"list":[` + strings.TrimSuffix(strings.Repeat(`1,`, 3000), ",") + `]}`
	r, err := Fit([]byte(doc), 1000)
	if err != nil {
		t.Fatal(err)
	}
	var s, l *Cut
	for i, c := range r.Cuts {
		switch c.Path {
		case "/a~1b/x~0/0":
			s = &r.Cuts[i]
		case "/list":
			l = &r.Cuts[i]
		}
	}
	if s == nil || s.Kind != "string" || s.Total != 3000 || l == nil || l.Kind != "array" || l.Total != 3000 {
		t.Fatalf("cuts %+v in %s", r.Cuts, r.JSON)
	}
	var v map[string]any
	if err := json.Unmarshal(r.JSON, &v); err != nil {
		t.Fatal(err)
	}
	str := v["a/b"].(map[string]any)["x~"].([]any)[0].(string)
	if !strings.HasPrefix(str, strings.Repeat("ü", s.Kept)) || !strings.HasSuffix(str, "… [3000 characters in all]") {
		t.Errorf("string %q", str)
	}
	if len(v["list"].([]any)) != l.Kept {
		t.Errorf("list kept %d, cut says %d", len(v["list"].([]any)), l.Kept)
	}
}

// TestFitLeavesNumbersAndSmallDocuments: a document within the budget is
// returned as it is; numbers keep their text.
func TestFitLeavesNumbersAndSmallDocuments(t *testing.T) {
	doc := []byte(`{"n":1.50e+3,"big":123456789012345678901234567890}`)
	r, err := Fit(doc, 1000)
	if err != nil || string(r.JSON) != string(doc) || r.CutCount != 0 {
		t.Fatalf("%s %v", r.JSON, err)
	}
	big := []byte(`[` + strings.Repeat(`{"n":1.50e+3},`, 200) + `"end"]`)
	r, err = Fit(big, 200)
	if err != nil || !strings.Contains(string(r.JSON), `1.50e+3`) {
		t.Fatalf("%s %v", r.JSON, err)
	}
	if _, err := Fit([]byte(`{"a":`), 100); err == nil {
		t.Error("invalid JSON fitted")
	}
}

func FuzzFit(f *testing.F) {
	f.Add([]byte(`{"a":[1,2,3,"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"],"b":{"c":[[],{}]}}`), 20)
	f.Add([]byte(`"`+strings.Repeat("x", 100)+`"`), 10)
	f.Add([]byte(`[[[[[[1]]]]]]`), 3)
	f.Fuzz(func(t *testing.T, doc []byte, max int) {
		if max < 0 || max > 1<<20 || !jsontext.Value(doc).IsValid() {
			return
		}
		r, err := Fit(doc, max)
		if max < 2 {
			if err == nil {
				t.Fatal("fitted in less than 2 bytes")
			}
			return
		}
		if err != nil {
			return // a document the decoder refuses (duplicate names)
		}
		if len(r.JSON) > max || !jsontext.Value(r.JSON).IsValid() {
			t.Fatalf("%q in %d: %q", doc, max, r.JSON)
		}
		if jsontext.Value(r.JSON).Kind() != jsontext.Value(doc).Kind() && !(jsontext.Value(doc).Kind() != '{' && jsontext.Value(doc).Kind() != '[') {
			t.Fatalf("kind changed: %q → %q", doc, r.JSON)
		}
	})
}
