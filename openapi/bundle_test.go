package openapi

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/httptools/httptools/synth"
)

// TestBundleMakesOneDocument: a document over many files is bundled
// before the loader sees it (bundle.go), and each of the places a bundler
// must get right imports as the API means it:
//   - two files of one name in two folders stay two schemas, each named
//     after its file in the tool (no suffix where a tool has only one);
//   - a schema file that names itself (a tree) is one definition that
//     refers to itself, not read for ever;
//   - a file that refers back into the document (../api.yaml#/…) names
//     the document's own component;
//   - a discriminator's mapping to a file names the schema made of it;
//   - a response, a parameter and a header in files become components;
//   - an example's value holding "$ref" is data, never read;
//   - an operation given as a $ref with keys beside it (Algolia's
//     operationId and requestBody) is the object with those keys over
//     it, and a map of responses given as a $ref is read in.
func TestBundleMakesOneDocument(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("api.yaml", `openapi: 3.0.3
info: {title: Bundle, version: "1"}
servers: [{url: "https://api.example.com"}]
paths:
  /vms/{id}:
    get:
      operationId: getDroplet
      parameters: [{$ref: 'shared/id.yml'}]
      responses:
        "200": {$ref: 'resources/droplets/ok.yml'}
  /images:
    post:
      operationId: makeImage
      requestBody:
        content:
          application/json:
            schema: {$ref: 'resources/images/image.yml'}
            examples:
              one: {value: {$ref: 'not/a/file.yml', name: x}}
      responses:
        "201":
          description: made
          content:
            application/json:
              schema:
                type: object
                properties:
                  a: {$ref: 'resources/droplets/urn.yml'}
                  b: {$ref: 'resources/images/urn.yml'}
                  pet: {$ref: 'models/pet.yml'}
  /custom/{path}:
    post:
      operationId: customPost
      requestBody: {content: {application/json: {schema: {type: object, properties: {note: {type: string}}}}}}
      $ref: 'shared/custom.yml#/customRequest'
  /trees:
    get:
      operationId: getTree
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {$ref: 'models/tree.yml'}
components:
  schemas:
    Region: {type: string, enum: [nyc1, sfo3]}
`)
	write("shared/id.yml", "{name: id, in: path, required: true, schema: {type: integer}}\n")
	write("resources/droplets/ok.yml", `description: the droplet
headers:
  RateLimit-Remaining: {$ref: '../../shared/ratelimit.yml'}
content:
  application/json:
    schema:
      type: object
      properties:
        urn: {$ref: 'urn.yml'}
        region: {$ref: '../../api.yaml#/components/schemas/Region'}
`)
	write("shared/custom.yml", `customRequest:
  summary: Send any request
  parameters: [{$ref: '#/PathInPath'}]
  responses: {$ref: '#/Responses'}
PathInPath: {name: path, in: path, required: true, schema: {type: string}}
Responses:
  "200": {description: OK, content: {application/json: {schema: {type: object, properties: {echoed: {type: boolean}}}}}}
  "400": {$ref: '../resources/droplets/ok.yml'}
`)
	write("shared/ratelimit.yml", "{schema: {type: integer}}\n")
	write("resources/droplets/urn.yml", "{type: string, pattern: '^do:droplet:'}\n")
	write("resources/images/urn.yml", "{type: string, pattern: '^do:image:'}\n")
	write("resources/images/image.yml", `type: object
required: [name]
properties:
  name: {type: string}
  urn: {$ref: 'urn.yml'}
`)
	write("models/tree.yml", `type: object
properties:
  name: {type: string}
  children: {type: array, items: {$ref: 'tree.yml'}}
`)
	write("models/pet.yml", `oneOf: [{$ref: 'cat.yml'}, {$ref: 'dog.yml'}]
discriminator:
  propertyName: kind
  mapping: {cat: 'cat.yml', dog: 'dog.yml'}
`)
	write("models/cat.yml", "{type: object, properties: {kind: {type: string}, lives: {type: integer}}}\n")
	write("models/dog.yml", "{type: object, properties: {kind: {type: string}, good: {type: boolean}}}\n")

	reads := map[string]int{}
	readFile = func(p string) ([]byte, error) {
		rel, _ := filepath.Rel(dir, p)
		reads[filepath.ToSlash(rel)]++
		return os.ReadFile(p)
	}
	defer func() { readFile = os.ReadFile }()
	path := filepath.Join(dir, "api.yaml")
	src, _ := os.ReadFile(path)
	res, err := Import(src, Options{Path: path, AllowExternalRefs: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Manifests) != 4 {
		t.Fatalf("%s %v", res.Summary(), res.Warnings)
	}
	for f, n := range reads {
		if n != 1 {
			t.Errorf("%s read %d times", f, n)
		}
	}
	if reads["not/a/file.yml"] != 0 || len(reads) != 11 {
		t.Errorf("reads %v: want the 11 files the document names where the format reads, each once", reads)
	}
	tools := map[string]string{}
	for _, m := range res.Manifests {
		var v struct{ ID string }
		json.Unmarshal(m.JSON, &v)
		tools[v.ID] = string(m.JSON)
	}
	has := func(id string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(tools[id], w) {
				t.Errorf("%s: no %s in %s", id, w, tools[id])
			}
		}
	}
	// The parameter, the response and its header came from files; the
	// droplet's urn.yml is named after its file, though the image's was
	// made a component first.
	has("example.get-droplet", `"id"`, `"type": "integer"`, `"^do:droplet:"`, `"nyc1"`)
	has("example.make-image", `"^do:image:"`, `"^do:droplet:"`, `"lives"`, `"good"`)
	has("example.get-tree", `"children"`)
	has("example.custom-post", `"Send any request"`, `"path"`, `"note"`, `"echoed"`, `"required": [`)
	var out struct {
		Output struct {
			Defs map[string]any `json:"$defs"`
		}
	}
	json.Unmarshal([]byte(tools["example.get-droplet"]), &out)
	if _, ok := out.Output.Defs["urn.yml"]; !ok || len(out.Output.Defs) != 2 {
		t.Errorf("get-droplet's definitions: %v, want urn.yml and Region", keys(out.Output.Defs))
	}
	out.Output.Defs = nil
	json.Unmarshal([]byte(tools["example.get-tree"]), &out)
	if tree, _ := json.Marshal(out.Output.Defs); !strings.Contains(string(tree), `"$ref":"#/$defs/tree.yml"`) {
		t.Errorf("the tree does not refer to itself: %s", tree)
	}
}

func keys(m map[string]any) []string { return sortedKeys(m) }

// TestBundleRefusals: what a bundled document may not do is refused in
// words that name the reference: a file that is not there, a pointer to
// nothing, a path item that names itself.
func TestBundleRefusals(t *testing.T) {
	for _, c := range []struct{ name, files, want string }{
		{"missing file", "", "nowhere.yml"},
		{"pointer to nothing", "nowhere.yml: {a: {type: string}}", "nowhere.yml#/b: nothing is there"},
		{"path item names itself", "nowhere.yml: {$ref: 'nowhere.yml'}", "refers to itself"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ref := "nowhere.yml"
			if c.name == "pointer to nothing" {
				ref = "nowhere.yml#/b"
			}
			doc := "openapi: 3.0.3\ninfo: {title: R, version: '1'}\nservers: [{url: 'https://api.example.com'}]\npaths:\n  /x: {$ref: '" + ref + "'}\n"
			os.WriteFile(filepath.Join(dir, "api.yaml"), []byte(doc), 0o644)
			if name, body, ok := strings.Cut(c.files, ": "); ok {
				os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
			}
			_, err := Import([]byte(doc), Options{Path: filepath.Join(dir, "api.yaml"), AllowExternalRefs: true})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v, want %q", err, c.want)
			}
		})
	}
}

// TestBundleBoundsCopies: properties files that each name the next one
// twice (p0 → p1 twice → p2 …, 24 deep, under the depth bound) would be
// 2^24 copies read in; they are refused after maxCopies, each file read
// once.
func TestBundleBoundsCopies(t *testing.T) {
	dir := t.TempDir()
	doc := `openapi: 3.0.3
info: {title: R, version: '1'}
servers: [{url: 'https://api.example.com'}]
paths:
  /x:
    post:
      requestBody:
        content:
          application/json:
            schema: {type: object, properties: {$ref: 'p0.yml'}}
      responses: {"204": {description: ok}}
`
	os.WriteFile(filepath.Join(dir, "api.yaml"), []byte(doc), 0o644)
	for i := range 24 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("p%d.yml", i)), []byte(fmt.Sprintf(`a: {type: object, properties: {$ref: 'p%d.yml'}}
b: {type: object, properties: {$ref: 'p%d.yml'}}
`, i+1, i+1)), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "p24.yml"), []byte("leaf: {type: string}\n"), 0o644)
	reads := 0
	readFile = func(p string) ([]byte, error) { reads++; return os.ReadFile(p) }
	defer func() { readFile = os.ReadFile }()
	_, err := Import([]byte(doc), Options{Path: filepath.Join(dir, "api.yaml"), AllowExternalRefs: true})
	if err == nil || !strings.Contains(err.Error(), "more than 65536 times") || reads != 25 {
		t.Errorf("%v (%d reads)", err, reads)
	}
}

// FuzzBundle: a document and one file beside it, any bytes, import or
// fail with an error; never a panic, never a read outside the document's
// folder.
func FuzzBundle(f *testing.F) {
	f.Add([]byte("openapi: 3.0.3\ninfo: {title: F, version: '1'}\nservers: [{url: 'https://a.example'}]\npaths:\n  /x:\n    get:\n      parameters: [{$ref: 'side.yml#/p'}]\n      responses: {'200': {$ref: 'side.yml#/r'}}\n"),
		[]byte("p: {name: q, in: query, schema: {$ref: '#/s'}}\nr: {description: ok, content: {application/json: {schema: {$ref: '#/s'}}}}\ns: {type: object, properties: {self: {$ref: '#/s'}}, discriminator: {propertyName: k, mapping: {a: 'side.yml#/s'}}}\n"))
	f.Add([]byte("openapi: 3.1.0\ninfo: {title: F, version: '1'}\nservers: [{url: 'https://a.example'}]\npaths:\n  /x: {$ref: 'side.yml'}\n"),
		[]byte("get: {operationId: g, responses: {'200': {description: ok, content: {application/json: {schema: {type: object, properties: {$ref: 'side.yml#/get'}}}}}}}\n"))
	f.Add([]byte("openapi: 3.0.0\ninfo: {title: F, version: '1'}\npaths:\n  /x: {get: {$ref: '../side.yml'}}\n"), []byte("{}"))
	f.Add([]byte("openapi: 3.0.0\ninfo: {title: F, version: '1'}\nservers: [{url: 'https://a.example'}]\npaths:\n  /x/{p}: {get: {operationId: o, $ref: 'side.yml#/op'}}\n"),
		[]byte("op: {parameters: [{$ref: '#/p'}], responses: {$ref: '#/rs'}}\np: {name: p, in: path, required: true, schema: {type: string}}\nrs: {'200': {description: ok, content: {application/json: {schema: {type: object}}}}, $ref: '#/rs'}\n"))
	f.Fuzz(func(t *testing.T, doc, side []byte) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "api.yaml"), doc, 0o644)
		os.WriteFile(filepath.Join(dir, "side.yml"), side, 0o644)
		readFile = func(p string) ([]byte, error) {
			if rel, err := filepath.Rel(dir, p); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
				t.Fatalf("read %s, outside %s", p, dir)
			}
			return os.ReadFile(p)
		}
		defer func() { readFile = os.ReadFile }()
		res, err := Import(doc, Options{Path: filepath.Join(dir, "api.yaml"), AllowExternalRefs: true})
		if err != nil {
			return
		}
		for _, m := range res.Manifests {
			if _, err := synth.Load(m.JSON); err != nil {
				t.Fatalf("%s does not load: %v", m.ID, err)
			}
		}
	})
}
