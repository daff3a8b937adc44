package redact_test

import (
	"fmt"

	"github.com/httptools/httptools/redact"
)

// A set holds the secrets one call resolved; every text the library
// returns passes through it, whatever the spelling the secret took there.
func ExampleSet_Redact() {
	s := &redact.Set{}
	s.Add("s3cr/t+token-42")
	for _, text := range []string{
		"upstream said: bad token s3cr/t+token-42",
		`{"echo":"s3cr\/t+token-42"}`,                      // JSON-escaped
		"https://api.example.com/?key=s3cr%2Ft%2Btoken-42", // percent-encoded
		"a log line cut at s3cr/t+to",                      // a prefix of 8 or more
	} {
		fmt.Println(s.Redact(text))
	}
	// Output:
	// upstream said: bad token [REDACTED]
	// {"echo":"[REDACTED]"}
	// https://api.example.com/?key=[REDACTED]
	// a log line cut at [REDACTED]
}
