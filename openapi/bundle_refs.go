package openapi

import (
	"errors"
	"fmt"
	pathpkg "path"
	"regexp"
	"strings"
)

// Bundling's references: where a reference leads (resolve, object), and
// what it becomes there: a component of the document named after it
// (hoist), or a copy read in where it is named (inline).

// resolve reads ref, written in file: the file and pointer it names, and
// whether that is outside the document (another file, or a place in a file
// other than the document).
func (b *bundler) resolve(file, ref string) (target, ptr string, external bool) {
	name, ptr, _ := strings.Cut(ref, "#")
	switch {
	case name == "":
		target = file
	case strings.Contains(name, "://") || pathpkg.IsAbs(name):
		target = name // refused when read, in the policy's words
	default:
		target = pathpkg.Join(pathpkg.Dir(file), name)
	}
	return target, ptr, target != b.root
}

// object returns the object at ptr of file, and the file its own
// references are relative to.
func (b *bundler) object(file, ptr, ref string) (map[string]any, string, error) {
	doc, ok := b.files[file]
	if !ok {
		src, err := b.read(file)
		if err != nil {
			return nil, "", err
		}
		if doc, err = decodeYAML(src); err != nil {
			return nil, "", fmt.Errorf("%s: %v", ref, err)
		}
		b.files[file] = doc
	}
	v := doc
	if ptr != "" {
		v = pointerGet(doc, ptr)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		if v == nil {
			return nil, "", fmt.Errorf("%s: nothing is there", ref)
		}
		return nil, "", fmt.Errorf("%s: not an object", ref)
	}
	return obj, file, nil
}

// hoist makes the object at ptr of file a component of k's section, once,
// and returns the reference to it.
func (b *bundler) hoist(k kind, file, ptr, ref string) (string, error) {
	key := file + "#" + ptr
	if to, ok := b.done[key]; ok {
		return to, nil
	}
	obj, tfile, err := b.object(file, ptr, ref)
	if err != nil {
		return "", err
	}
	sec := section[k]
	base := componentName(file, ptr)
	name := base
	for n := 2; b.names[sec+"/"+name]; n++ {
		name = fmt.Sprintf("%s_%d", base, n)
	}
	b.names[sec+"/"+name] = true
	to := "#/components/" + sec + "/" + name
	if name != base && b.alias != nil {
		b.alias[to] = base
	}
	b.done[key] = to // before its insides: a schema may name itself
	obj = deepCopy(obj).(map[string]any)
	if b.comps[sec] == nil {
		comps, _ := b.doc["components"].(map[string]any)
		if comps == nil {
			comps = map[string]any{}
			b.doc["components"] = comps
		}
		m, _ := comps[sec].(map[string]any)
		if m == nil {
			m = map[string]any{}
			comps[sec] = m
		}
		b.comps[sec] = m
	}
	// A component whose own body is a reference is walked as one.
	v, err := b.walk(obj, k, tfile, 0, ref)
	if err != nil {
		return "", err
	}
	b.comps[sec][name] = v
	return to, nil
}

// inline returns a copy of the object at ptr of file, walked as a k, to
// stand where it is named.
func (b *bundler) inline(k kind, file, ptr, ref string, depth int) (map[string]any, error) {
	key := file + "#" + ptr
	if b.stack[key] || depth >= maxInline {
		return nil, fmt.Errorf("%s refers to itself", ref)
	}
	obj, tfile, err := b.object(file, ptr, ref)
	if err != nil {
		return nil, err
	}
	if err := b.copied(ref); err != nil {
		return nil, err
	}
	b.stack[key] = true
	defer delete(b.stack, key)
	v, err := b.walk(deepCopy(obj), k, tfile, depth+1, ref)
	if err != nil {
		return nil, err
	}
	m, _ := v.(map[string]any)
	if m == nil {
		return nil, errors.New(ref + ": not an object")
	}
	return m, nil
}

// copied counts one more object read in where it is named.
func (b *bundler) copied(ref string) error {
	if b.copies++; b.copies > maxCopies {
		return fmt.Errorf("%s: the files are read in where named more than %d times (a file that names itself more than once on each level?)", ref, maxCopies)
	}
	return nil
}

var componentChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// componentName names the component made of the object at ptr of file:
// the pointer's last step, or the file's name (vpc.yml), as the reference
// was written, so that what is named after it reads the same.
func componentName(file, ptr string) string {
	base := pathpkg.Base(file)
	if ptr = strings.TrimRight(ptr, "/"); ptr != "" {
		base = ptr[strings.LastIndexByte(ptr, '/')+1:]
		base = strings.NewReplacer("~1", "/", "~0", "~").Replace(base)
	}
	base = strings.Trim(componentChars.ReplaceAllString(base, "_"), "_")
	if base == "" {
		base = "object"
	}
	return base
}

// deepCopy copies a decoded document's maps and lists.
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = deepCopy(e)
		}
		return l
	}
	return v
}
