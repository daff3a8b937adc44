package history

import "slices"

// Scope limits the records about tools (calls, approvals) to those whose
// tool a caller may see: the tool policies and a key's toolset decide it,
// and a rule may name persons, so what is visible of a record depends on
// its person. A nil *Scope lets every record through.
type Scope struct {
	// Persons maps a person to the tool ids visible in that person's
	// records.
	Persons map[string][]string
	// Others are the tool ids visible in the records of every person
	// Persons does not name (and of none, "", unless Persons names it).
	Others []string
}

// Allows says whether s lets through a record of tool for person.
func (s *Scope) Allows(tool, person string) bool {
	if s == nil {
		return true
	}
	if ids, ok := s.Persons[person]; ok {
		return slices.Contains(ids, tool)
	}
	return slices.Contains(s.Others, tool)
}
