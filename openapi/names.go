package openapi

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"net"
	"regexp"
	"slices"
	"strings"
)

// Names: tool ids, prefixes, secret and connection names, versions.

func sortedKeys[K ~string, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}

var nonWord = regexp.MustCompile(`[^a-z0-9]+`)

// slug makes an id part: "Swagger Petstore - OpenAPI 3.0" → "swagger-petstore".
func slug(title string) string {
	title = strings.ToLower(strings.SplitN(title, " - ", 2)[0])
	s := strings.Trim(nonWord.ReplaceAllString(title, "-"), "-")
	if s == "" {
		return "api"
	}
	return s
}

// kebab makes the tool part of an id from the operationId (or the method and
// path), acronyms kept whole: getPetById → get-pet-by-id,
// GETSendMessage → get-send-message, listHTTPRoutes → list-http-routes,
// issues/list-for-repo → issues-list-for-repo.
func kebab(opID, method, path string) string {
	if opID == "" {
		opID = strings.ToLower(method) + " " + path
	}
	rs := []rune(opID)
	var b strings.Builder
	isUpper := func(r rune) bool { return r >= 'A' && r <= 'Z' }
	isLower := func(r rune) bool { return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' }
	for i, r := range rs {
		if isUpper(r) && i > 0 {
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && isLower(rs[i+1]) && !(rs[i+1] >= '0' && rs[i+1] <= '9')
			// A word starts at an upper case letter after a lower case
			// one, or at the last capital of an acronym before a lower
			// case letter ("HTTPRoutes": HTTP, Routes).
			if isLower(prev) || (isUpper(prev) && nextLower) {
				b.WriteByte('-')
			}
		}
		if isUpper(r) {
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	s := strings.Trim(nonWord.ReplaceAllString(b.String(), "-"), "-")
	if s == "" {
		return "operation"
	}
	return s
}

// maxIDLength bounds tool ids: MCP clients and models show them whole.
const maxIDLength = 64

// toolID joins prefix and name, cut to maxIDLength on a word with a hash
// of the whole kept, so that two long names stay apart.
func toolID(prefix, name string) string {
	id := prefix + "." + name
	if len(id) <= maxIDLength {
		return id
	}
	h := "-" + shortHash(id)
	cut := id[:maxIDLength-len(h)]
	if i := strings.LastIndexByte(cut, '-'); i > len(prefix)+1 {
		cut = cut[:i]
	}
	return cut + h
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:3])
}

// prefixOf makes the id prefix from the server's host: its registrable
// name first, then what comes before it (api.stripe.com → stripe,
// messaging.twilio.com → twilio-messaging, www.googleapis.com →
// googleapis); the title's slug when the host says nothing.
func prefixOf(host, title string) string {
	labels := strings.Split(strings.ToLower(strings.TrimSuffix(host, ".")), ".")
	if len(labels) >= 2 && net.ParseIP(host) == nil {
		labels = labels[:len(labels)-1] // the top-level domain
		if n := len(labels); n >= 2 && len(labels[n-1]) <= 3 && (labels[n-1] == "co" || labels[n-1] == "com") {
			labels = labels[:n-1] // example.co.uk
		}
		name := labels[len(labels)-1]
		var sub []string
		for _, l := range labels[:len(labels)-1] {
			if l != "api" && l != "www" && !regexp.MustCompile(`^v\d+$`).MatchString(l) {
				sub = append(sub, l)
			}
		}
		parts := append([]string{name}, sub...)
		if p := strings.Trim(nonWord.ReplaceAllString(strings.Join(parts, "-"), "-"), "-"); p != "" {
			return p
		}
	}
	return slug(title)
}

// envName turns a scheme name into a secret name: api_key → API_KEY.
func envName(s string) string {
	return strings.Trim(strings.ToUpper(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(s, "_")), "_")
}

func connName(s string) string {
	return strings.Trim(regexp.MustCompile(`[^a-z0-9_]+`).ReplaceAllString(strings.ToLower(s), "_"), "_")
}

var semver = regexp.MustCompile(`^\d+\.\d+\.\d+`)

func version(v string) string {
	if m := semver.FindString(v); m != "" {
		return m
	}
	return "1.0.0"
}
