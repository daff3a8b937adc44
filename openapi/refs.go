package openapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// readFile reads a referenced file (a test counts the reads).
var readFile = os.ReadFile

// refReader reads the other files a document refers to: refused unless
// Options.AllowExternalRefs, and then only files below the document's
// folder (or Options.RefsRoot), never URLs, each read once.
type refReader struct {
	opts     Options
	location *url.URL // the document's file, nil when it has none
	root     string   // the document's folder
	allowed  string   // where referenced files may be read from
	// cache holds each file read: a shared file that many references
	// name (hundreds of times in a big multi-file description) is not
	// read, parsed and rewritten again for each.
	cache map[string][]byte
}

func newRefReader(opts Options) (*refReader, error) {
	r := &refReader{opts: opts, cache: map[string][]byte{}}
	if opts.Path != "" {
		abs, err := filepath.Abs(opts.Path)
		if err != nil {
			return nil, err
		}
		r.location = &url.URL{Path: filepath.ToSlash(abs)}
		r.root = filepath.Dir(abs)
	}
	r.allowed = r.root
	if opts.RefsRoot != "" {
		abs, err := filepath.Abs(opts.RefsRoot)
		if err != nil {
			return nil, err
		}
		r.allowed = abs
	}
	return r, nil
}

// rootFile is the document's file, "" when it has none.
func (r *refReader) rootFile() string {
	if r.location == nil {
		return ""
	}
	return r.location.Path
}

// loader is a kin-openapi loader whose every read of another document
// passes through readURI. Every external reference reaches it, which
// refuses it in our words (with the flag that allows it) unless it is
// allowed: the loader's own refusal is never what the user reads.
func (r *refReader) loader() *openapi3.Loader {
	l := openapi3.NewLoader()
	l.IsExternalRefsAllowed = true
	l.ReadFromURIFunc = r.readURI
	return l
}

// resolve decodes the document (decode.go) and resolves its references,
// which after bundling are the document's own.
func (r *refReader) resolve(g map[string]any) (*openapi3.T, error) {
	doc, err := decodeDocument(g)
	if err != nil {
		return nil, err
	}
	// No location: every reference left is the document's own, and the
	// loader takes a place named from a document that has a location
	// other than its root's for another file's.
	if err := r.loader().ResolveRefsIn(doc, nil); err != nil {
		return nil, err
	}
	return doc, nil
}

// readBundled reads a file bundling names: a path, or a file:// URL.
func (r *refReader) readBundled(file string) ([]byte, error) {
	if strings.Contains(file, "://") {
		u, err := url.Parse(file)
		if err != nil {
			return nil, fmt.Errorf("%s: only files next to the document are read, never URLs", file)
		}
		return r.readBelow(u)
	}
	return r.readBelow(&url.URL{Path: file})
}

// readURI is every read of another document by the loader, once a file.
func (r *refReader) readURI(_ *openapi3.Loader, u *url.URL) ([]byte, error) {
	key := filepath.Clean(filepath.FromSlash(u.Path))
	if data, ok := r.cache[key]; ok {
		return data, nil
	}
	data, err := r.readFrom(u)
	if err == nil {
		r.cache[key] = data
	}
	return data, err
}

// readBelow reads a file below the document's folder, and nothing else:
// refused unless allowed.
func (r *refReader) readBelow(u *url.URL) ([]byte, error) {
	if !r.opts.AllowExternalRefs {
		return nil, fmt.Errorf("the document refers to %s: pass --allow-external-refs to read files next to it", u)
	}
	if r.root == "" {
		return nil, errors.New("external $refs are resolved from the document's folder: name the document's file (Options.Path)")
	}
	if u.Scheme != "" && u.Scheme != "file" || u.Host != "" {
		return nil, fmt.Errorf("%s: only files next to the document are read, never URLs", u)
	}
	p := filepath.Clean(filepath.FromSlash(u.Path))
	if rel, err := filepath.Rel(r.allowed, p); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		if r.opts.RefsRoot != "" {
			return nil, fmt.Errorf("%s: only files below %s (--refs-root) are read", u.Path, r.allowed)
		}
		return nil, fmt.Errorf("%s: only files below the document's folder %s are read (--refs-root DIR allows a folder above it)", u.Path, r.root)
	}
	data, err := readFile(p)
	if err != nil {
		return nil, err
	}
	if ext := strings.ToLower(filepath.Ext(p)); ext == ".yaml" || ext == ".yml" {
		data = spaceBeforeComments(data)
	}
	return data, nil
}

// readIn is readBelow for a path relative to a folder.
func (r *refReader) readIn(dir string) func(rel string) ([]byte, error) {
	return func(rel string) ([]byte, error) {
		return r.readBelow(&url.URL{Path: filepath.ToSlash(filepath.Join(dir, filepath.FromSlash(rel)))})
	}
}

// readFrom reads a referenced file and its "properties": {"$ref": …}
// read in, relative to that file (the files it brings in, hop by hop, at
// most 32 deep).
func (r *refReader) readFrom(u *url.URL) ([]byte, error) {
	data, err := r.readBelow(u)
	if err != nil || !bytes.Contains(data, []byte("properties")) {
		return data, err
	}
	v, err := decodeYAML(data)
	if err != nil {
		return data, nil // the loader reports it
	}
	changed := false
	read := r.readIn(filepath.Dir(filepath.FromSlash(u.Path)))
	err = inlineMapRefs(v, func(rel string) ([]byte, error) {
		changed = true
		return read(rel)
	}, 0)
	if err != nil || !changed {
		return data, err
	}
	return json.Marshal(v)
}
