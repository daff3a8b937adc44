package openapi

import (
	"encoding/json"
	"flag"
	"fmt"
	"go.yaml.in/yaml/v4"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/httptools/httptools/synth"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// TestImportGolden imports each document of testdata and compares every
// manifest (and the warnings) with testdata/golden/<doc>/.
func TestImportGolden(t *testing.T) {
	docs, _ := filepath.Glob("testdata/*.yaml")
	js, _ := filepath.Glob("testdata/*.json")
	docs = append(docs, js...)
	if len(docs) < 2 {
		t.Fatalf("want the 3.0 and 3.1 documents, got %v", docs)
	}
	// Documents imported with options: in several files, with their $refs
	// allowed; with relative servers only, given the host.
	const do = "testdata/digitalocean/DigitalOcean-public.v2.yaml"
	docs = append(docs, do)
	special := map[string]Options{
		do:                                {Path: do, AllowExternalRefs: true},
		"testdata/docker-engine-2.0.yaml": {Server: "http://localhost:2375"},
	}
	for _, doc := range docs {
		name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(doc), ".yaml"), ".json")
		if doc == do {
			name = filepath.Base(filepath.Dir(doc))
		}
		t.Run(name, func(t *testing.T) {
			src, _ := os.ReadFile(doc)
			opts := special[doc]
			res, err := Import(src, opts)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join("testdata", "golden", name)
			files := map[string][]byte{"warnings.txt": []byte(strings.Join(append(res.Warnings, res.Summary()), "\n") + "\n")}
			for _, m := range res.Manifests {
				files[m.ID+".json"] = m.JSON
				// Every generated manifest loads without errors.
				if _, err := synth.Load(m.JSON); err != nil {
					t.Errorf("%s: %v", m.ID, err)
				}
			}
			if *update {
				os.RemoveAll(dir)
				os.MkdirAll(dir, 0o755)
				for f, b := range files {
					os.WriteFile(filepath.Join(dir, f), b, 0o644)
				}
			}
			have, _ := filepath.Glob(filepath.Join(dir, "*"))
			if len(have) != len(files) {
				t.Errorf("golden has %d files, the import made %d (go test ./openapi -update)", len(have), len(files))
			}
			for f, b := range files {
				want, err := os.ReadFile(filepath.Join(dir, f))
				if err != nil || string(want) != string(b) {
					t.Errorf("%s differs from its golden file (go test ./openapi -update to accept):\n%s", f, b)
				}
			}
		})
	}
}

func TestImportOptions(t *testing.T) {
	src, _ := os.ReadFile("testdata/petstore-3.0.yaml")
	res, err := Import(src, Options{Operations: []string{"getPetById", "nope"}, Prefix: "pets", Server: "https://pets.example.com/v3"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Manifests) != 1 || res.Manifests[0].ID != "pets.get-pet-by-id" || !strings.Contains(string(res.Manifests[0].JSON), `"urlTemplate": "https://pets.example.com/v3/pet/{petId}"`) {
		t.Errorf("manifests %v", res.Manifests)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], `"nope" is not in the document`) {
		t.Errorf("warnings %v", res.Warnings)
	}
	for _, bad := range []struct{ src, want string }{
		{`openapi: 3.0.0\ninfo: {title: x, version: '1'}\npaths: {}`, "no server"},
		{"openapi: 3.0.0\ninfo: {title: x, version: '1'}\nservers: [{url: /v1}]\npaths: {}", "not an absolute"},
		{`{"swagger": "2.0"}`, ""},
	} {
		if _, err := Import([]byte(strings.ReplaceAll(bad.src, `\n`, "\n")), Options{}); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v", bad.src, err)
		}
	}
}

// FuzzImport: any document imports or fails with an error; never a panic,
// and every manifest it returns loads.
func FuzzImport(f *testing.F) {
	for _, p := range []string{"testdata/petstore-3.0.yaml", "testdata/github-issues-3.1.yaml"} {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Add([]byte(`{"openapi":"3.1.0","info":{"title":"t","version":"1"},"servers":[{"url":"https://a.example"}],"paths":{"/x/{id}":{"get":{"parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}}}}`))
	f.Fuzz(func(t *testing.T, src []byte) {
		res, err := Import(src, Options{})
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

// TestOperationServers: an operation's own servers, then its path's, win
// over the document's, for the URL and the allowlist; a relative first
// server gives way to an absolute one.
func TestOperationServers(t *testing.T) {
	doc := `openapi: 3.0.0
info: {title: Maps, version: 1.0.0}
servers: [{url: /relative}, {url: "https://www.googleapis.com"}]
paths:
  /maps/api/directions/json:
    servers: [{url: "https://maps.googleapis.com"}]
    get:
      operationId: directions
      responses: {"200": {description: ok, content: {application/json: {schema: {type: object}}}}}
  /upload:
    post:
      operationId: upload
      servers: [{url: "https://upload.example.com/api/{v}", variables: {v: {default: "2.0"}}}]
      requestBody: {content: {application/json: {schema: {type: object, properties: {name: {type: string}}}}}}
      responses: {"201": {description: ok}}
  /plain:
    get:
      operationId: plain
      responses: {"200": {description: ok}}
`
	res, err := Import([]byte(doc), Options{Prefix: "maps"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"maps.directions": "https://maps.googleapis.com/maps/api/directions/json",
		"maps.upload":     "https://upload.example.com/api/2.0/upload",
		"maps.plain":      "https://www.googleapis.com/plain",
	}
	for _, m := range res.Manifests {
		var tl struct {
			Network struct{ Hosts []string }
			Spec    struct{ URLTemplate string }
		}
		json.Unmarshal(m.JSON, &tl)
		if tl.Spec.URLTemplate != want[m.ID] {
			t.Errorf("%s: %s, want %s", m.ID, tl.Spec.URLTemplate, want[m.ID])
		}
		if u, _ := url.Parse(want[m.ID]); len(tl.Network.Hosts) != 1 || tl.Network.Hosts[0] != u.Hostname() {
			t.Errorf("%s: allowlist %v", m.ID, tl.Network.Hosts)
		}
		delete(want, m.ID)
	}
	if len(want) != 0 {
		t.Errorf("not imported: %v (%s)", want, res.Summary())
	}
}

// TestExternalRefs: a document split over files imports with
// AllowExternalRefs, reading only files below its folder; without it the
// refusal says what to pass.
func TestExternalRefs(t *testing.T) {
	path := "testdata/split/api.yaml"
	src, _ := os.ReadFile(path)
	_, err := Import(src, Options{Path: path})
	if err == nil || !strings.Contains(err.Error(), "--allow-external-refs") {
		t.Fatalf("without the option: %v", err)
	}
	res, err := Import(src, Options{Path: path, AllowExternalRefs: true})
	if err != nil || len(res.Manifests) != 1 {
		t.Fatalf("%v %v", err, res)
	}
	var m struct {
		Input struct {
			Required []string
		}
	}
	json.Unmarshal(res.Manifests[0].JSON, &m)
	if strings.Join(m.Input.Required, ",") != "from,to,subject" {
		t.Errorf("required %v", m.Input.Required)
	}
	// A reference out of the folder, or to a URL, is refused.
	for _, ref := range []string{"../resend-emails-3.1.yaml#/components/schemas/Tag", "https://example.com/s.yaml#/X", "/etc/passwd#/x"} {
		dir := t.TempDir()
		doc := strings.Replace(string(src), "schemas.yaml#/SendEmailRequest", ref, 1)
		os.WriteFile(filepath.Join(dir, "api.yaml"), []byte(doc), 0o644)
		if _, err := Import([]byte(doc), Options{Path: filepath.Join(dir, "api.yaml"), AllowExternalRefs: true}); err == nil {
			t.Errorf("%s was read", ref)
		}
	}
}

// TestLiteralQueryInPath: a path key with a literal query ("?cors", as S3
// writes them) keeps it, and the parameters continue it with &.
func TestLiteralQueryInPath(t *testing.T) {
	doc := `openapi: 3.0.0
info: {title: S3, version: 2006.3.1}
servers: [{url: "https://s3.amazonaws.com"}]
paths:
  /{Bucket}?cors:
    get:
      operationId: GetBucketCors
      parameters:
        - {name: Bucket, in: path, required: true, schema: {type: string}}
        - {name: x-amz-expected-bucket-owner, in: header, required: false, schema: {type: string}}
        - {name: max-keys, in: query, schema: {type: integer}}
      responses: {"200": {description: ok, content: {text/xml: {schema: {type: object}}}}}
`
	if _, tmpl := onlyTemplate(t, []byte(doc), Options{}); tmpl != "https://s3.amazonaws.com/{Bucket}?cors{&max%2Dkeys}" {
		t.Errorf("template %s", tmpl)
	}
}

// TestBrokenComponentSkipsItsOperations: a malformed component, a
// reference to one that is not there or to one of another kind, skips the
// operations that use it (naming it), and the others import.
func TestBrokenComponentSkipsItsOperations(t *testing.T) {
	src, _ := os.ReadFile("testdata/resend-emails-3.1.yaml")
	var doc map[string]any
	if err := yaml.Unmarshal(src, &doc); err != nil {
		t.Fatal(err)
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	for name, broken := range map[string]any{
		"malformed":  map[string]any{"type": 5},
		"dangling":   map[string]any{"$ref": "#/components/schemas/NotThere"},
		"wrong kind": map[string]any{"$ref": "#/components/securitySchemes/bearerAuth"},
	} {
		t.Run(name, func(t *testing.T) {
			saved := schemas["SendEmailResponse"]
			schemas["SendEmailResponse"] = broken
			defer func() { schemas["SendEmailResponse"] = saved }()
			b, _ := json.Marshal(doc)
			res, err := Import(b, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Manifests) != 1 || res.Manifests[0].ID != "resend.emails-get" {
				t.Fatalf("imported %v", res.Manifests)
			}
			if !strings.Contains(string(res.Manifests[0].JSON), `"kind": "bearer"`) {
				t.Errorf("the other operation lost its credential:\n%s", res.Manifests[0].JSON)
			}
			if res.Operations != 2 || res.Skipped[SkipBrokenComponent] != 1 {
				t.Errorf("%s", res.Summary())
			}
			found := false
			for _, w := range res.Warnings {
				want := "schemas/SendEmailResponse"
				switch name {
				case "dangling":
					want = "schemas/NotThere" // the component that is not there
				case "wrong kind":
					// The reference is broken, not what it names: the
					// component it is in costs its users.
					want = "schemas/SendEmailResponse (it refers to securitySchemes/bearerAuth"
				}
				found = found || strings.Contains(w, "emails/send: skipped: it uses a broken component: "+want)
			}
			if !found {
				t.Errorf("warnings %v", res.Warnings)
			}
		})
	}
}

// TestWhatTheModelSees: descriptions in plain text and capped, ids at
// most 64 characters with acronyms whole, unique.
func TestWhatTheModelSees(t *testing.T) {
	for in, want := range map[string]string{
		"getPetById":                   "get-pet-by-id",
		"GETSendMessage":               "get-send-message",
		"listHTTPRoutes":               "list-http-routes",
		"issues/list-for-repo":         "issues-list-for-repo",
		"put_files_id#add_shared_link": "put-files-id-add-shared-link",
		"S3GetObjectACL":               "s3-get-object-acl",
	} {
		if got := kebab(in, "", ""); got != want {
			t.Errorf("kebab(%q) = %q, want %q", in, got, want)
		}
	}
	long := toolID("stripe", strings.Repeat("get-customers-customer-subscriptions-", 3))
	if len(long) > maxIDLength || !strings.HasPrefix(long, "stripe.get-customers") {
		t.Errorf("long id %q (%d)", long, len(long))
	}
	if toolID("stripe", strings.Repeat("a-", 40)+"x") == toolID("stripe", strings.Repeat("a-", 40)+"y") {
		t.Error("two long ids collide")
	}
	html := `<p>Returns a <b>list</b> of your <a href="https://stripe.com/docs">customers</a>.</p><p>The customers are returned sorted by creation date, with the most recent customers appearing first &amp; more.</p>`
	if got := plainText(html); got != "Returns a list of your customers.\n\nThe customers are returned sorted by creation date, with the most recent customers appearing first & more." {
		t.Errorf("html: %q", got)
	}
	md := "## Heading\n\nSee [the guide](https://x.test/guide) for **details** and `code`.\n\n\n\n![img](https://x.test/i.png)"
	if got := plainText(md); got != "Heading\n\nSee the guide for details and code.\n\nimg" {
		t.Errorf("markdown: %q", got)
	}
	d := cut(strings.Repeat("A sentence of some length. ", 100), maxDescription)
	if len(d) > maxDescription || !strings.HasSuffix(d, ".") {
		t.Errorf("cut: %d bytes, ends %q", len(d), d[len(d)-10:])
	}
}

// TestStylesHeadersAndBodies: path styles label and matrix, a required
// header filled from the input, pipeDelimited as a string of values joined
// by |; a body beside a header input is one member sent whole (json-input
// would send the header's value in it again), its allOf merged; without a
// header input, the members of an allOf nested two deep are the input's,
// read-only ones left out.
func TestStylesHeadersAndBodies(t *testing.T) {
	doc := `openapi: 3.0.0
info: {title: Styles, version: 1.0.0}
servers: [{url: "https://api.example.com"}]
paths:
  /a/{color}/{point}:
    put:
      operationId: put
      parameters:
        - {name: color, in: path, required: true, style: label, schema: {type: string}}
        - {name: point, in: path, required: true, style: matrix, explode: true, schema: {type: array, items: {type: integer}}}
        - {name: If-Match, in: header, required: true, schema: {type: string}}
        - {name: ids, in: query, style: pipeDelimited, schema: {type: array, items: {type: string}}}
      requestBody:
        content:
          application/json:
            schema:
              allOf:
                - {type: object, required: [name], properties: {name: {type: string}}}
                - {type: object, properties: {tags: {type: array, items: {type: string}}}}
      responses: {"204": {description: ok}}
  /meetings:
    post:
      operationId: create
      requestBody:
        required: true
        content:
          application/json:
            schema:
              allOf:
                - $ref: '#/components/schemas/Meeting'
                - {type: object, required: [topic], properties: {topic: {type: string}}}
      responses: {"204": {description: ok}}
components:
  schemas:
    Base:
      type: object
      required: [id, start]
      properties:
        id: {type: string, readOnly: true}
        start: {type: string}
    Meeting:
      allOf:
        - $ref: '#/components/schemas/Base'
        - {type: object, properties: {agenda: {type: string}, created: {type: string, readOnly: true}}}
`
	res, err := Import([]byte(doc), Options{})
	if err != nil || len(res.Manifests) != 2 {
		t.Fatalf("%v %s %v", err, res.Summary(), res.Warnings)
	}
	type manifest struct {
		Input struct {
			Properties map[string]map[string]any
			Required   []string
		}
		Spec struct {
			URLTemplate string
			Headers     []struct{ Name, Value string }
			RequestBody struct{ Kind, Template string }
		}
	}
	var create, put manifest
	for _, mf := range res.Manifests {
		if strings.HasSuffix(mf.ID, ".put") {
			json.Unmarshal(mf.JSON, &put)
		} else {
			json.Unmarshal(mf.JSON, &create)
		}
	}
	if put.Spec.URLTemplate != "https://api.example.com/a/{.color}/{;point*}{?ids}" {
		t.Errorf("template %s", put.Spec.URLTemplate)
	}
	if fmt.Sprint(put.Spec.Headers) != "[{If-Match {if_match}} {Content-Type application/json}]" || put.Spec.RequestBody.Template != "{body}" {
		t.Errorf("headers %+v, body %+v", put.Spec.Headers, put.Spec.RequestBody)
	}
	for _, k := range []string{"color", "point", "if_match", "body"} {
		if put.Input.Properties[k] == nil {
			t.Errorf("input has no %s: %v", k, put.Input.Properties)
		}
	}
	if body := fmt.Sprint(put.Input.Properties["body"]["properties"]); !strings.Contains(body, "name:") || !strings.Contains(body, "tags:") {
		t.Errorf("the body member is %v, want name and tags", put.Input.Properties["body"])
	}
	if ids := put.Input.Properties["ids"]; ids["type"] != "string" || !strings.Contains(fmt.Sprint(ids["description"]), "joined by |") {
		t.Errorf("the pipeDelimited parameter is %v, want a string of values joined by |", ids)
	}
	if got := strings.Join(put.Input.Required, ","); got != "color,point,if_match" { // the body is optional: so is its member
		t.Errorf("required %s", got)
	}
	if create.Spec.RequestBody.Kind != "json-input" || len(create.Spec.Headers) != 0 {
		t.Errorf("create: body %+v, headers %+v", create.Spec.RequestBody, create.Spec.Headers)
	}
	if got := strings.Join(slices.Sorted(maps.Keys(create.Input.Properties)), ","); got != "agenda,start,topic" {
		t.Errorf("create's members %s, want agenda,start,topic (id and created are read-only)", got)
	}
	if got := strings.Join(create.Input.Required, ","); got != "start,topic" {
		t.Errorf("create requires %s, want start,topic", got)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("warnings %v", res.Warnings)
	}
}

// TestDeepObjectQuery: a deepObject parameter becomes one variable per
// declared scalar member, name[] for a list of scalars, and one plain
// variable for its scalar alternatives; nested members and lists of
// objects are warned, an object without members is left out.
func TestDeepObjectQuery(t *testing.T) {
	doc := `openapi: 3.0.0
info: {title: Deep, version: 1.0.0}
servers: [{url: "https://api.example.com"}]
paths:
  /invoices:
    get:
      operationId: list
      parameters:
        - name: anchor
          in: query
          style: deepObject
          schema: {anyOf: [{type: string, enum: [now, unchanged]}, {type: integer}]}
        - name: details
          in: query
          style: deepObject
          schema:
            type: object
            properties:
              tax: {type: string}
              address: {type: object, properties: {city: {type: string}}}
        - name: items
          in: query
          style: deepObject
          schema: {type: array, items: {type: object, properties: {price: {type: string}}}}
        - name: metadata
          in: query
          style: deepObject
          schema: {type: object, additionalProperties: {type: string}}
      responses: {"200": {description: ok}}
`
	res, err := Import([]byte(doc), Options{})
	if err != nil || len(res.Manifests) != 1 {
		t.Fatalf("%v %s %v", err, res.Summary(), res.Warnings)
	}
	var m struct {
		Input struct{ Properties map[string]any }
		Spec  struct{ URLTemplate string }
	}
	json.Unmarshal(res.Manifests[0].JSON, &m)
	if m.Spec.URLTemplate != "https://api.example.com/invoices{?anchor,details%5Btax%5D}" {
		t.Errorf("template %s", m.Spec.URLTemplate)
	}
	if len(m.Input.Properties) != 2 || m.Input.Properties["anchor"] == nil || m.Input.Properties["details[tax]"] == nil {
		t.Errorf("input %v", m.Input.Properties)
	}
	w := strings.Join(res.Warnings, "\n")
	for _, want := range []string{
		`query parameter "details": details[address] left out`,
		`query parameter "items" left out: items[] has no agreed deepObject spelling`,
		`query parameter "metadata" left out: its style deepObject names no members`,
	} {
		if !strings.Contains(w, want) {
			t.Errorf("no warning %q in\n%s", want, w)
		}
	}
}

// TestLiteralCharactersInPaths: a path with characters RFC 6570 does not
// allow as literals (DigitalOcean's "PUT /<upload_url>") is sent with them
// percent-encoded, and its manifest loads.
func TestLiteralCharactersInPaths(t *testing.T) {
	doc := `openapi: 3.0.0
info: {title: Odd, version: 1.0.0}
servers: [{url: "https://api.example.com"}]
paths:
  /<upload_url>/a|b/{id}/100%:
    put:
      operationId: upload
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses: {"204": {description: ok}}
`
	manifest, tmpl := onlyTemplate(t, []byte(doc), Options{})
	if tmpl != "https://api.example.com/%3Cupload_url%3E/a%7Cb/{id}/100%25" {
		t.Errorf("template %s", tmpl)
	}
	if _, err := synth.Load(manifest); err != nil {
		t.Error(err)
	}
}

// TestRelativeServerBelowTheFlag: a document whose only server is a path
// (Docker's "/v1.45") keeps it below the host --server names; a --server
// with a path of its own is taken whole; without --server the error says
// what to pass.
func TestRelativeServerBelowTheFlag(t *testing.T) {
	doc := []byte(`openapi: 3.0.0
info: {title: Docker Engine API, version: "1.45"}
servers: [{url: /v1.45}]
paths:
  /containers/json:
    get:
      operationId: ContainerList
      responses: {"200": {description: ok, content: {application/json: {schema: {type: object}}}}}
`)
	if _, err := Import(doc, Options{}); err == nil || !strings.Contains(err.Error(), `server "/v1.45" is not an absolute http(s) URL, and no other is: pass --server`) {
		t.Errorf("without --server: %v", err)
	}
	for server, want := range map[string]string{
		"http://docker.internal:2375":       "http://docker.internal:2375/v1.45/containers/json",
		"http://docker.internal:2375/":      "http://docker.internal:2375/v1.45/containers/json",
		"http://docker.internal:2375/v1.44": "http://docker.internal:2375/v1.44/containers/json",
	} {
		if _, tmpl := onlyTemplate(t, doc, Options{Server: server}); tmpl != want {
			t.Errorf("--server %s: %s, want %s", server, tmpl, want)
		}
	}
}

// TestOperationAndPropertiesRefs: an operation given as a $ref to a file
// and "properties" given as a $ref (DigitalOcean's layout) are read in
// from the document's folder, their own refs relative to their files; a
// properties file that refers to itself is refused after 32 hops, not
// followed for ever; without --allow-external-refs nothing is read.
func TestOperationAndPropertiesRefs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	write("api.yaml", `openapi: 3.0.0
info: {title: Split, version: "1"}
servers: [{url: "https://api.example.com"}]
paths:
  /v2/things/{id}:
    put:
      $ref: resources/things/update.yml
`)
	write("resources/things/update.yml", `operationId: things_update
summary: Update a thing
parameters:
  - $ref: '../shared/id.yml'
requestBody:
  required: true
  content:
    application/json:
      schema:
        type: object
        required: [name]
        properties:
          $ref: 'models/thing_props.yml'
responses:
  "204": {description: done}
`)
	write("resources/shared/id.yml", `{name: id, in: path, required: true, schema: {type: string}}`)
	write("resources/things/models/thing_props.yml", `name: {type: string}
size: {type: integer}
`)
	src, _ := os.ReadFile(filepath.Join(dir, "api.yaml"))
	if _, err := Import(src, Options{Path: filepath.Join(dir, "api.yaml")}); err == nil {
		t.Error("read other files without --allow-external-refs")
	}
	res, err := Import(src, Options{Path: filepath.Join(dir, "api.yaml"), AllowExternalRefs: true})
	if err != nil || len(res.Manifests) != 1 {
		t.Fatalf("%v %v", err, res)
	}
	var m struct {
		ID    string
		Input struct {
			Properties map[string]any
			Required   []string
		}
	}
	json.Unmarshal(res.Manifests[0].JSON, &m)
	if m.ID != "example.things-update" || len(m.Input.Properties) != 3 || strings.Join(m.Input.Required, ",") != "id,name" {
		t.Errorf("%s: %v required %v", m.ID, m.Input.Properties, m.Input.Required)
	}
	// properties that refer to themselves
	write("resources/things/models/thing_props.yml", `name: {type: string}
more:
  type: object
  properties:
    $ref: 'thing_props.yml'
`)
	if _, err := Import(src, Options{Path: filepath.Join(dir, "api.yaml"), AllowExternalRefs: true}); err == nil || !strings.Contains(err.Error(), "32 files deep") {
		t.Errorf("a cycle: %v", err)
	}
}

// onlyTemplate imports doc, which must make exactly one manifest, and
// returns that manifest and its URL template.
func onlyTemplate(t *testing.T, doc []byte, opts Options) ([]byte, string) {
	t.Helper()
	res, err := Import(doc, opts)
	if err != nil {
		t.Fatalf("import (%+v): %v", opts, err)
	}
	if len(res.Manifests) != 1 {
		t.Fatalf("import (%+v): %d manifests, want 1: %s %v", opts, len(res.Manifests), res.Summary(), res.Warnings)
	}
	var m struct{ Spec struct{ URLTemplate string } }
	if err := json.Unmarshal(res.Manifests[0].JSON, &m); err != nil {
		t.Fatal(err)
	}
	return res.Manifests[0].JSON, m.Spec.URLTemplate
}
