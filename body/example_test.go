package body_test

import (
	"fmt"

	"github.com/httptools/httptools/body"
)

// The json-input body is the input minus what the URL consumed, its other
// members byte for byte and in order (big numbers exact).
func ExampleJSONWithout() {
	in := []byte(`{"owner":"octo","repo":"hello","title":"Bug","id":9007199254740993,"labels":["a"]}`)
	fmt.Println(string(body.JSONWithout(in, map[string]bool{"owner": true, "repo": true})))
	fmt.Println(body.JSONWithout([]byte(`{"owner":"octo"}`), map[string]bool{"owner": true}) == nil)
	// Output:
	// {"title":"Bug","id":9007199254740993,"labels":["a"]}
	// true
}
