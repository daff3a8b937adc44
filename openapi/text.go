package openapi

import (
	"html"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
)

// maxDescription bounds a tool's description: a model reads every tool's
// description on every turn.
const maxDescription = 1000

// describeOperation words what a tool does for a model: the operation's
// summary and description, else its path's, else its id in words; in
// plain text, cut cleanly at maxDescription.
func describeOperation(op *openapi3.Operation, item *openapi3.PathItem, method, path string) string {
	var parts []string
	add := func(s string) {
		s = plainText(s)
		if s != "" && !slices.Contains(parts, s) {
			parts = append(parts, s)
		}
	}
	add(op.Summary)
	add(op.Description)
	if len(parts) == 0 {
		add(item.Summary)
		add(item.Description)
		if op.OperationID != "" {
			parts = append([]string{sentence(op.OperationID)}, parts...)
		}
	}
	d := strings.Join(parts, "\n\n")
	if d == "" {
		d = method + " " + path
	}
	return cut(d, maxDescription)
}

// sentence turns an operation id into words: FetchShortCode → "Fetch
// short code.", conversations_list → "Conversations list."
func sentence(id string) string {
	w := strings.ReplaceAll(kebab(id, "", ""), "-", " ")
	if w == "" {
		return ""
	}
	r, n := utf8.DecodeRuneInString(w)
	return strings.ToUpper(string(r)) + w[n:] + "."
}

var (
	htmlTag    = regexp.MustCompile(`(?s)<[^>]*>`)
	paraTag    = regexp.MustCompile(`(?i)<\s*(/p|/div|/h[1-6]|/table|/ul|/ol)\s*>`)
	lineTag    = regexp.MustCompile(`(?i)<\s*(br|/li|/tr)\s*/?>`)
	mdImage    = regexp.MustCompile(`!\[([^\]]*)\]\([^)]*\)`)
	mdLink     = regexp.MustCompile(`\[([^\]]+)\]\([^)]*\)`)
	mdEmphasis = regexp.MustCompile(`(\*\*|__)(.+?)(\*\*|__)`)
	mdCode     = regexp.MustCompile("`([^`]*)`")
	mdHeading  = regexp.MustCompile(`(?m)^#{1,6}\s+`)
	blankLines = regexp.MustCompile(`\n{3,}`)
	spaces     = regexp.MustCompile(`[ \t]+`)
)

// plainText reduces HTML and Markdown to the text a model needs: tags and
// link targets gone, entities decoded, emphasis and code marks dropped,
// paragraphs kept.
func plainText(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = paraTag.ReplaceAllString(s, "\n\n")
	s = lineTag.ReplaceAllString(s, "\n")
	s = htmlTag.ReplaceAllString(s, "")
	s = html.UnescapeString(s)
	s = mdImage.ReplaceAllString(s, "$1")
	s = mdLink.ReplaceAllString(s, "$1")
	s = mdEmphasis.ReplaceAllString(s, "$2")
	s = mdCode.ReplaceAllString(s, "$1")
	s = mdHeading.ReplaceAllString(s, "")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(spaces.ReplaceAllString(l, " "))
	}
	s = blankLines.ReplaceAllString(strings.Join(lines, "\n"), "\n\n")
	return strings.TrimSpace(s)
}

// cut shortens s to at most n bytes, at the end of a sentence or a word,
// marking the cut with "…".
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n-len("…")]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	if i := strings.LastIndex(s, ". "); i > n/2 {
		return s[:i+1] // a whole sentence
	}
	if i := strings.LastIndexAny(s, " \n"); i > n/2 {
		s = s[:i]
	}
	return strings.TrimRight(s, " \n,;:") + "…"
}
