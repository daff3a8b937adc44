package httpspec

import (
	"net/url"
	"strings"
)

// A dot segment ("." or "..") in a request path is resolved away by servers
// and proxies (RFC 3986 §5.2.4): /api/{x}/info with x = ".." reaches /info.
// The handler refuses any segment of the expanded path that a server could
// read as one: written plainly, percent-encoded (%2e%2E, once or twice),
// with a ;parameter after it (..;x, which Tomcat resolves), or hidden behind
// an encoded slash or a backslash (a%2F..%2Fb, ..\x).

// dotSegment reports whether one path segment, as sent, may be resolved as
// "." or "..".
func dotSegment(seg string) bool {
	for range 3 { // as sent, decoded once, decoded twice (a proxy, then the server)
		if hasDotPart(seg) {
			return true
		}
		dec, err := url.PathUnescape(seg)
		if err != nil || dec == seg {
			return false
		}
		seg = dec
	}
	return hasDotPart(seg)
}

func hasDotPart(seg string) bool {
	for _, part := range strings.FieldsFunc(seg, func(r rune) bool { return r == '/' || r == '\\' }) {
		if p, _, _ := strings.Cut(part, ";"); p == "." || p == ".." {
			return true
		}
	}
	return seg == "." || seg == ".."
}

// dotSegments returns the byte ranges of the segments of the path of u (an
// absolute URL whose path starts after the origin of length originLen) that
// dotSegment refuses.
func dotSegments(u string, originLen int) [][2]int {
	path := u[originLen:]
	if end := strings.IndexAny(path, "?#"); end >= 0 {
		path = path[:end]
	}
	if !strings.ContainsAny(path, ".%") {
		return nil // no dot, plain or encoded
	}
	var out [][2]int
	start := 0
	for i := 0; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		if seg := path[start:i]; seg != "" && dotSegment(seg) {
			out = append(out, [2]int{originLen + start, originLen + i})
		}
		start = i + 1
	}
	return out
}
