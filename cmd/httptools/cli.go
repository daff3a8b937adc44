package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/httptools/httptools/synth"
)

// A command is one subcommand's flags and help: -h, -help and --help print
// the help on stdout and exit 0; a bad flag prints one line on stderr (the
// flag as --name, the nearest flag it may have meant, and where the help
// is) and exits 2: the help after it would push the error off the screen.
type command struct {
	*flag.FlagSet
	name     string          // "keys create"
	synopsis string          // what follows "httptools " in the usage line
	about    string          // a paragraph under it
	env      bool            // flags may also come from HTTPTOOLS_<FLAG> variables
	envOnly  map[string]bool // …only these, when not empty
	getenv   func(string) string
	// notes says why a flag the command does not take is not needed here
	// (test: "allow-cidr"), for the line a wrong flag prints.
	notes map[string]string
}

func newCommand(name, synopsis, about string) *command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the errors are printed by parse, with the help
	fs.Usage = func() {}
	return &command{FlagSet: fs, name: name, synopsis: synopsis, about: about, getenv: os.Getenv}
}

// fromEnv lets every flag of c (or only the flags named) be set by its
// variable, HTTPTOOLS_ and the flag's name in capitals with - as _
// (--public-url: HTTPTOOLS_PUBLIC_URL), as container platforms expect. A
// flag on the command line wins; a list flag takes a comma-separated value.
func (c *command) fromEnv(only ...string) *command {
	c.env = true
	for _, n := range only {
		if c.envOnly == nil {
			c.envOnly = map[string]bool{}
		}
		c.envOnly[n] = true
	}
	return c
}

// envName is the variable of a flag.
func envName(flagName string) string {
	return "HTTPTOOLS_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// help writes the usage line, the paragraph and the flags.
func (c *command) help(w io.Writer) {
	fmt.Fprintf(w, "usage: httptools %s\n", c.usageLine())
	if c.about != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.about))
	}
	n := 0
	c.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	fmt.Fprintln(w, "\nflags:")
	c.printFlags(w)
	if c.env && c.envOnly != nil {
		var vs []string
		c.VisitAll(func(f *flag.Flag) {
			if c.envOnly[f.Name] {
				vs = append(vs, "--"+f.Name+" by "+envName(f.Name))
			}
		})
		fmt.Fprintf(w, "\nAlso set from the environment: %s. The command line wins.\n", strings.Join(vs, ", "))
	} else if c.env {
		fmt.Fprintln(w, "\nEach flag may also be set by its variable: HTTPTOOLS_ and the flag's name in capitals,\n- as _ (--public-url: HTTPTOOLS_PUBLIC_URL; lists comma-separated). The command line wins.")
	}
}

// usageLine is the synopsis with every flag it does not name appended,
// so that the usage line cannot fall behind the flags: a synopsis ending
// in "[flags]" names the important ones and leaves the rest to the list.
func (c *command) usageLine() string {
	line := c.synopsis
	if strings.HasSuffix(line, "[flags]") {
		return line
	}
	c.VisitAll(func(f *flag.Flag) {
		if namesFlag(c.synopsis, f.Name) {
			return
		}
		name, _ := flag.UnquoteUsage(f)
		name = strings.ToUpper(name) // a placeholder, as the synopses write them
		if name == "" {
			line += " [--" + f.Name + "]"
		} else {
			line += " [--" + f.Name + " " + name + "]"
		}
	})
	return line
}

// namesFlag reports whether text names --name as a whole flag (not
// --name-more).
func namesFlag(text, name string) bool {
	for rest := text; ; {
		i := strings.Index(rest, "--"+name)
		if i < 0 {
			return false
		}
		rest = rest[i+2+len(name):]
		if rest == "" || !isFlagChar(rest[0]) {
			return true
		}
	}
}

func isFlagChar(b byte) bool {
	return b == '-' || b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// flagError words a parse error of Go's flag package as one line: flags
// spelt --name as the help spells them, an unknown flag with the nearest
// known one, and where the help is.
func (c *command) flagError(err error) string {
	msg := err.Error()
	more := " (httptools " + c.name + " --help lists every flag)"
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		line := "unknown flag --" + name
		var known []string
		c.VisitAll(func(f *flag.Flag) { known = append(known, f.Name) })
		if best := synth.Closest(name, known); best != "" {
			line += "; did you mean --" + best + "?"
		}
		if note := c.notes[name]; note != "" {
			line += "; " + note
		}
		return line + more
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return "flag --" + name + " needs a value (--" + name + " VALUE or --" + name + "=VALUE)" + more
	}
	return flagDashes.ReplaceAllString(msg, "$1 --$2") + more
}

// flagDashes finds a flag named with one dash in the flag package's
// messages ("for flag -port:", "for -dry-run:").
var flagDashes = regexp.MustCompile(`(for flag|for) -([A-Za-z0-9][-A-Za-z0-9_.]*)`)

// printFlags is flag.PrintDefaults with the flags written as they are
// used, --name, and no second default where the usage names its own
// ("(default a quarter of memory)").
func (c *command) printFlags(w io.Writer) {
	c.VisitAll(func(f *flag.Flag) {
		var b strings.Builder
		fmt.Fprintf(&b, "  --%s", f.Name)
		name, usage := flag.UnquoteUsage(f)
		if name != "" {
			b.WriteString(" " + name)
		}
		if b.Len() <= 5 { // "  --x": the usage fits on the same line
			b.WriteString("\t")
		} else {
			b.WriteString("\n    \t")
		}
		b.WriteString(strings.ReplaceAll(usage, "\n", "\n    \t"))
		if !strings.Contains(usage, "(default") && !isZeroDefault(f) {
			if isString(f) {
				fmt.Fprintf(&b, " (default %q)", f.DefValue)
			} else {
				fmt.Fprintf(&b, " (default %v)", f.DefValue)
			}
		}
		fmt.Fprintln(w, b.String())
	})
}

// isZeroDefault reports whether f's default is its type's zero value,
// which the help leaves out as flag.PrintDefaults does.
func isZeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "0", "false", "[]", "0s":
		return true
	}
	return false
}

// isString reports whether f is a string flag (its default is quoted).
func isString(f *flag.Flag) bool {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return false
	}
	_, s := g.Get().(string)
	return s
}

// parse parses args, flags before or after the positional arguments (which
// it returns). When it returns ok false the command is over with exit code
// rc: 0 after help on stdout, 2 after a bad flag's line on stderr.
func (c *command) parse(args []string, stdout, stderr io.Writer) (pos []string, rc int, ok bool) {
	for {
		if err := c.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				c.help(stdout)
				return nil, 0, false
			}
			fmt.Fprintf(stderr, "httptools %s: %s\n", c.name, c.flagError(err))
			return nil, 2, false
		}
		args = c.Args()
		if len(args) == 0 {
			break
		}
		if args[0] == "--" {
			pos = append(pos, args[1:]...)
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if c.env {
		set := map[string]bool{}
		c.Visit(func(f *flag.Flag) { set[f.Name] = true })
		var bad error
		c.VisitAll(func(f *flag.Flag) {
			if c.envOnly != nil && !c.envOnly[f.Name] {
				return
			}
			v := c.getenv(envName(f.Name))
			if set[f.Name] || v == "" || bad != nil {
				return
			}
			parts := []string{v}
			if _, list := f.Value.(interface{ list() }); list {
				parts = strings.Split(v, ",")
			}
			for _, p := range parts {
				if err := c.Set(f.Name, strings.TrimSpace(p)); err != nil {
					bad = fmt.Errorf("%s=%q: %v", envName(f.Name), v, err)
					return
				}
			}
		})
		if bad != nil {
			fmt.Fprintf(stderr, "httptools %s: %v\n", c.name, bad)
			return nil, 2, false
		}
	}
	return pos, 0, true
}

// wantsHelp: the only argument asks for help (for commands whose arguments
// are paths, not flags).
func wantsHelp(args []string) bool {
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			return true
		}
	}
	return false
}
