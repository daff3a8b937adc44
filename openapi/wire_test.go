package openapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/httpspec"
	toolstest "github.com/httptools/httptools/httptest"
	"github.com/httptools/httptools/openapi"
	"github.com/httptools/httptools/synth"
)

// importOne imports one operation of a test document and loads it with a
// client whose every request reaches up.
func importOne(t *testing.T, doc, operation string, up *toolstest.Upstream) *synth.Tool {
	t.Helper()
	src, err := os.ReadFile("testdata/" + doc)
	if err != nil {
		t.Fatal(err)
	}
	res, err := openapi.Import(src, openapi.Options{Operations: []string{operation}})
	if err != nil || len(res.Manifests) != 1 {
		t.Fatalf("%v: %s %v", err, res.Summary(), res.Warnings)
	}
	reg := &synth.Registry{}
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(up.Client()))
	tool, err := (&synth.Loader{Registry: reg}).Load(res.Manifests[0].JSON)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

// TestImportedToolsOnTheWire: what the imported Twilio tools send — a
// form body with free text encoded, basic auth from its secret, the
// path-level server.
func TestImportedToolsOnTheWire(t *testing.T) {
	up := toolstest.NewUpstream()
	defer up.Close()
	up.Script(toolstest.Response{Status: 201, JSON: json.RawMessage(`{"sid":"MGaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}`)})
	tool := importOne(t, "twilio-messaging-v1.json", "CreateService", up)
	cc := synth.CallContext{Secrets: auth.Map{"production/ACCOUNTSID_AUTHTOKEN": "Basic QUMxOnNlY3JldA=="}}
	_, err := tool.Invoke(context.Background(), cc, json.RawMessage(`{"FriendlyName":"Alerts & Co = 100%","StickySender":true}`), synth.InvokeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reqs := up.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Method != "POST" || r.URL != "https://messaging.twilio.com/v1/Services" {
		t.Errorf("%s %s", r.Method, r.URL)
	}
	if r.Header.Get("Authorization") != "Basic QUMxOnNlY3JldA==" || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
		t.Errorf("headers %v", r.Header)
	}
	form, err := url.ParseQuery(string(r.Body))
	if err != nil || form.Get("FriendlyName") != "Alerts & Co = 100%" || form.Get("StickySender") != "true" || len(form) != 2 {
		t.Errorf("body %q read as %v (%v)", r.Body, form, err)
	}
}

// TestEveryImportedToolDryRuns: every manifest imported from every test
// document (their golden files, which TestImportGolden holds to the
// import) describes its request without a secret or a connection source.
func TestEveryImportedToolDryRuns(t *testing.T) {
	files, _ := filepath.Glob("testdata/golden/*/*.json")
	if len(files) < 20 {
		t.Fatalf("only %d golden manifests", len(files))
	}
	n := 0
	{
		var manifests []openapi.Manifest
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			manifests = append(manifests, openapi.Manifest{ID: strings.TrimSuffix(filepath.Base(f), ".json"), JSON: b})
		}
		for _, m := range manifests {
			tool, err := synth.Load(m.JSON)
			if err != nil {
				t.Fatalf("%s: %v", m.ID, err)
			}
			in := map[string]any{}
			var mf struct {
				Input struct {
					Properties map[string]struct {
						Type any `json:"type"`
					} `json:"properties"`
					Required []string `json:"required"`
				} `json:"input"`
			}
			json.Unmarshal(m.JSON, &mf)
			for _, r := range mf.Input.Required {
				switch mf.Input.Properties[r].Type {
				case "integer", "number":
					in[r] = 1
				case "boolean":
					in[r] = true
				default:
					in[r] = "x"
				}
			}
			b, _ := json.Marshal(in)
			cc := synth.CallContext{Secrets: anySecret{}}
			out, err := tool.DryRun(context.Background(), cc, b, synth.InvokeOptions{})
			var e *synth.Error
			if err != nil && !(errors.As(err, &e) && e.Code == synth.CodeInputValidationFailed) {
				t.Errorf("%s: %v", m.ID, err)
				continue
			}
			if err == nil {
				n++
				if !strings.Contains(string(out), `"curl"`) {
					t.Errorf("%s: %s", m.ID, out)
				}
			}
		}
	}
	// The others refused the stand-in input (patterns, enums): they got
	// as far as the input check, which is not this test's.
	if n < 9 {
		t.Errorf("only %d tools dry-ran", n)
	}
	t.Logf("%d tools dry-ran", n)
}

// anySecret resolves every reference to a stand-in.
type anySecret struct{}

func (anySecret) ResolveSecret(context.Context, synth.SecretRef) (string, error) {
	return "stand-in-secret-value", nil
}

// TestStripeFormOnTheWire: Stripe's create-customer sends its nested
// members the way Stripe reads them: address[city]=…, metadata[k]=…,
// expand[]=….
func TestStripeFormOnTheWire(t *testing.T) {
	up := toolstest.NewUpstream()
	defer up.Close()
	up.Script(toolstest.Response{Status: 200, JSON: json.RawMessage(`{"id":"cus_1","object":"customer"}`)})
	tool := importOne(t, "stripe-customers.json", "PostCustomers", up)
	cc := synth.CallContext{Secrets: auth.Map{"production/BEARERAUTH": "sk_test_123"}}
	_, err := tool.Invoke(context.Background(), cc, json.RawMessage(`{"name":"Ann & Co","address":{"city":"Köln","line1":"Hauptstr. 1"},"metadata":{"order id":"6735"},"expand":["default_source"]}`), synth.InvokeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := up.Requests()[0]
	form, err := url.ParseQuery(string(r.Body))
	if err != nil || form.Get("name") != "Ann & Co" || form.Get("address[city]") != "Köln" || form.Get("address[line1]") != "Hauptstr. 1" ||
		form.Get("metadata[order id]") != "6735" || form.Get("expand[]") != "default_source" || len(form) != 5 {
		t.Errorf("body %q read as %v (%v)", r.Body, form, err)
	}
	if r.Header.Get("Authorization") != "Bearer sk_test_123" || r.URL != "https://api.stripe.com/v1/customers" {
		t.Errorf("%s %v", r.URL, r.Header)
	}
}

// TestStripeDeepObjectQueryOnTheWire: Stripe's deepObject filters go out
// as created[gte]=…&created[lt]=… and expand[]=… (issue 13: they went out
// comma-joined), read back by a standard query parser.
func TestStripeDeepObjectQueryOnTheWire(t *testing.T) {
	up := toolstest.NewUpstream()
	defer up.Close()
	up.Script(toolstest.Response{Status: 200, JSON: json.RawMessage(`{"object":"list","data":[]}`)})
	tool := importOne(t, "stripe-customers.json", "GetCustomers", up)
	cc := synth.CallContext{Secrets: auth.Map{"production/BEARERAUTH": "sk_test_123"}}
	_, err := tool.Invoke(context.Background(), cc, json.RawMessage(`{"created[gte]":1700000000,"created[lt]":1710000000,"expand[]":["data.default_source","data.tax"],"limit":3}`), synth.InvokeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(up.Requests()[0].URL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if q.Get("created[gte]") != "1700000000" || q.Get("created[lt]") != "1710000000" || q.Get("limit") != "3" ||
		strings.Join(q["expand[]"], ",") != "data.default_source,data.tax" || len(q) != 4 {
		t.Errorf("query %q read as %v", u.RawQuery, q)
	}
	if u.Path != "/v1/customers" {
		t.Errorf("path %s", u.Path)
	}
}

// TestWholeBodyOnTheWire: the Xero tool sends its tenant header once, in
// the header, and the body member exactly as given, as JSON.
func TestWholeBodyOnTheWire(t *testing.T) {
	up := toolstest.NewUpstream()
	defer up.Close()
	up.Script(toolstest.Response{Status: 200, JSON: json.RawMessage(`{}`)})
	src, err := os.ReadFile("testdata/classes/xero-accounting-tenant-header.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, err := openapi.Import(src, openapi.Options{Operations: []string{"createContacts"}})
	if err != nil || len(res.Manifests) != 1 {
		t.Fatalf("%v %v", err, res)
	}
	reg := &synth.Registry{}
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(up.Client()))
	tool, err := (&synth.Loader{Registry: reg}).Load(res.Manifests[0].JSON)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"Contacts":[{"Name":"Ann","EmailAddress":"ann@example.com"}]}`
	cc := synth.CallContext{Connections: tokenSource{}, Person: "p"}
	if _, err := tool.Invoke(context.Background(), cc, json.RawMessage(`{"xero_tenant_id":"T-1","body":`+body+`}`), synth.InvokeOptions{}); err != nil {
		t.Fatal(err)
	}
	r := up.Requests()[0]
	if r.Header.Get("Xero-Tenant-Id") != "T-1" || r.Header.Get("Content-Type") != "application/json" || string(r.Body) != body {
		t.Errorf("sent %s %s %v %s", r.Method, r.URL, r.Header, r.Body)
	}
}

type tokenSource struct{}

func (tokenSource) AccessToken(context.Context, synth.ConnectionRequest) (string, error) {
	return "tok", nil
}
