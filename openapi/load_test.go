package openapi

import "testing"

// TestYAMLTimestampsStayAsWritten: an unquoted timestamp (an example, a
// default) is the text the document wrote, as the loader reads it, not a
// time written again in another form ("…Z").
func TestYAMLTimestampsStayAsWritten(t *testing.T) {
	v, err := decodeYAML([]byte("a: 2019-09-03T16:34:46.000+00:00\nb: [2001-12-14]\nc: '2020-01-01'\n"))
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	if m["a"] != "2019-09-03T16:34:46.000+00:00" || m["b"].([]any)[0] != "2001-12-14" || m["c"] != "2020-01-01" {
		t.Errorf("%#v", m)
	}
}
