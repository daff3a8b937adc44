package sqlstore

import (
	"encoding/json"
	"sort"

	"github.com/httptools/httptools/history"
)

// scopeClause is the condition of a query of records about tools (calls,
// approvals) that lets through only those sc allows, with its arguments:
// "" for a nil scope. Each list of ids is one argument, a JSON array, so
// that a catalogue of thousands of tools is not thousands of parameters.
func (s *SQLStore) scopeClause(sc *history.Scope) (string, []any) {
	if sc == nil {
		return "", nil
	}
	in := ` IN (SELECT value FROM json_each(?))`
	if s.pg {
		in = ` IN (SELECT jsonb_array_elements_text(?::jsonb))`
	}
	list := func(ids []string) string {
		if ids == nil {
			ids = []string{}
		}
		b, _ := json.Marshal(ids)
		return string(b)
	}
	persons := make([]string, 0, len(sc.Persons))
	for p := range sc.Persons {
		persons = append(persons, p)
	}
	sort.Strings(persons)
	q := ` AND (`
	var args []any
	for _, p := range persons {
		q += `(person = ? AND tool` + in + `) OR `
		args = append(args, p, list(sc.Persons[p]))
	}
	q += `(person NOT` + in + ` AND tool` + in + `))`
	args = append(args, list(persons), list(sc.Others))
	return q, args
}
