package mcpauth

import (
	"encoding/json"
	"net/http"
)

// ClientMetadataDocument builds httptools' Client ID Metadata Document: the
// JSON an authorization server fetches at clientID (an https URL, which is
// also the document's client_id) to learn the client's name and redirect
// URIs. httptools is a public client there (token_endpoint_auth_method
// none).
func ClientMetadataDocument(clientID, name string, redirectURIs []string) []byte {
	if name == "" {
		name = "httptools"
	}
	doc, _ := json.Marshal(map[string]any{
		"client_id":                  clientID,
		"client_name":                name,
		"redirect_uris":              redirectURIs,
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": AuthNone,
	})
	return doc
}

// MetadataHandler serves doc (ClientMetadataDocument's) to GET and HEAD,
// for serve to mount at the path of its client_id URL.
func MetadataHandler(doc []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "GET the client metadata document", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=3600")
		w.Write(doc)
	})
}
