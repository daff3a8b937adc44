package main

import (
	"go/ast"
	"go/token"
	"sort"
	"strings"
	"testing"
)

// globals is every package-level variable of the module's libraries (not
// the programs of cmd/ and bench/), by kind: what design.md's "Global
// state" sentence says there is. A variable added (or removed) fails TestGlobalState until it is
// named here, in the kind that says why it may be global. Error values and
// compiled regular expressions are not listed: they are values.
var globals = map[string]string{
	"synth.defaultRegistry": "registry",
	"internal/hangup.C":     "signal",

	// Built once, on first use or at start, and only read after.
	"httpspec.defaultClient": "once", "httpspec.defaultClientOnce": "once",
	"mcpremote.sharedClient": "once", "mcpremote.sharedOnce": "once",
	"synth.manifestSchema": "once", "synth.manifestSchemaOnce": "once", "synth.draft2020Meta": "once",
	"synth.globalTracer": "once", "synth.printer": "once", "internal/tracing.unset": "once",
	"server.serverInfoMeta": "once", "httptest.casesSchema": "once",
	// What the MCP fast path learned of the SDK's handler, asked once
	// (the header values it accepts, the HTTP status of each error code).
	"server.probedShapes": "once", "server.statusProbe": "once", "server.errorStatuses": "once",

	// Pools and caches that hold no call's data.
	"fetch.addrStrings": "pool", "internal/jsoncheck.scratches": "pool",
	"internal/jsonlog.buffers": "pool", "internal/jsonlog.last": "pool",
	"synth.fieldNamesCache": "pool",

	// For tests only.
	"openapi.readFile": "test", "server.idleGrace": "test",
	"internal/faults.once": "test", "internal/faults.server": "test",
	"internal/testkit.Loopback": "test", "internal/testsum.suites": "test",
	"internal/benchkit.Answer": "test", "internal/benchkit.Upstream": "test",

	// Read-only tables.
	"connections.discard": "table", "connections/sqlstore.migrations": "table",
	"fetch.auditAttrs": "table", "fetch.clientSpan": "table", "fetch.deniedRanges": "table",
	"httpspec.canonicalOnly": "table", "httpspec.contentTypes": "table", "httpspec.forbiddenHeaders": "table",
	"httpspec.operators": "table", "httpspec.specSchema": "table", "httpspec.userAgent": "table",
	"httptest.apiAddr": "table", "httptest.casesSchemaJSON": "table", "httptest.everyRange": "table",
	"internal/jsoncheck.class": "table", "internal/jsoncheck.decoders": "table", "internal/jsoncheck.lenient": "table",
	"internal/jsoncheck.replacement": "table", "internal/jsoncheck.strict": "table",
	"mcpremote.implementation": "table", "mcpremote.specSchema": "table",
	"openapi.bodyCredentialNames": "table", "openapi.componentDecoders": "table", "openapi.credentialNames": "table",
	"openapi.methods": "table", "openapi.prose": "table", "openapi.schemaLists": "table", "openapi.schemaMaps": "table",
	"openapi.schemaOne": "table", "openapi.section": "table", "openapi.pathMethods": "table", "openapi.schemaFields": "table",
	"policy.auths": "table", "policy.effects": "table", "policy.kinds": "table", "policy.roles": "table",
	"redact.entities": "table", "redact.triggerSets": "table", "redact/redacttest.encodings": "table",
	"server.approvalSchema": "table", "server.connectedPage": "table", "server.discoveryTools": "table",
	"server.fastVersions": "table", "server.jsonType": "table", "server.levelRank": "table",
	"server.lineSeparators": "table", "server.listenTool": "table", "server.logLevelPath": "table",
	"server.fastShapeCandidates": "table", "server.outputHeadBytes": "table", "server.quoteSafe": "table",
	"server.refusedBody": "table", "server.rpcErrorWords": "table", "server.stopWords": "table",
	"server.traceMetaKeys": "table", "server.uiFiles": "table", "server.uiPages": "table", "server.verbs": "table",
	"synth.annotationKeys": "table", "synth.dialects": "table",
	"synth.metaPlaceOne": "table", "synth.metaPlaceMap": "table", "synth.metaPlaceList": "table", "synth.scopeKeys": "table", "synth.internalSpan": "table",
	"synth.simpleTypes": "table", "synth.toolSchemaJSON": "table", "trim.steps": "table",
}

// TestGlobalState: the module's package-level variables are the ones
// globals names, no more and no fewer.
func TestGlobalState(t *testing.T) {
	t.Chdir("../..")
	found := map[string]bool{}
	eachGoFile(t, 0, false, func(dir string, f *ast.File) {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if n.Name != "_" && (i >= len(vs.Values) || !isValue(vs.Values[i])) {
						found[dir+"."+n.Name] = true
					}
				}
			}
		}
	})
	var added, gone []string
	for name := range found {
		if globals[name] == "" && !strings.HasPrefix(name, "bench/") && !strings.HasPrefix(name, "cmd/") {
			added = append(added, name)
		}
	}
	for name := range globals {
		if !found[name] {
			gone = append(gone, name)
		}
	}
	sort.Strings(added)
	sort.Strings(gone)
	for _, n := range added {
		t.Errorf("package variable %s is not in globals: name it there under the kind that says why it may be global (and keep design.md's sentence true)", n)
	}
	for _, n := range gone {
		t.Errorf("globals names %s, which is gone: remove it", n)
	}
}

// isValue is an initializer that makes a value, not state: an error or a
// compiled regular expression.
func isValue(e ast.Expr) bool {
	c, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	se, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	fn := fmtExpr(se.X) + "." + se.Sel.Name
	return fn == "errors.New" || fn == "fmt.Errorf" || fn == "regexp.MustCompile"
}

func fmtExpr(e ast.Expr) string {
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
