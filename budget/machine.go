package budget

import (
	"bufio"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// DefaultSize is a quarter of the memory this process may use: the smaller
// of the machine's memory and the limits of its cgroup and of every cgroup
// above it (a container's, a systemd unit's MemoryMax=, a nested group's),
// or 1 GiB when none can be read.
func DefaultSize() int64 {
	m := machineMemory()
	if m <= 0 {
		return 1 << 30
	}
	return m / 4
}

func machineMemory() int64 {
	total := memTotal("/proc/meminfo")
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return total
	}
	if l := cgroupLimit("/sys/fs/cgroup", string(cg)); l > 0 && (total <= 0 || l < total) {
		total = l
	}
	return total
}

func memTotal(file string) int64 {
	f, err := os.Open(file)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// cgroupLimit is the smallest memory limit on the way from the process's
// cgroup (as /proc/self/cgroup names it, selfCgroup) up to the root of the
// hierarchy mounted at root: cgroup v2's memory.max and memory.high, v1's
// memory.limit_in_bytes; 0 when there is none. A level that does not exist
// under the mount (a container that sees its own group as the mount's
// root) is passed over, so the walk ends at the mount whatever it shows.
func cgroupLimit(root, selfCgroup string) int64 {
	var best int64
	take := func(file string) {
		b, err := os.ReadFile(file)
		if err != nil {
			return
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64) // "max" fails: no limit
		if err == nil && n > 0 && n < 1<<62 && (best == 0 || n < best) {
			best = n
		}
	}
	for _, line := range strings.Split(selfCgroup, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var dir string
		var files []string
		switch {
		case parts[0] == "0" && parts[1] == "": // v2, or the unified half of a hybrid
			dir, files = root, []string{"memory.max", "memory.high"}
			if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err != nil {
				dir = filepath.Join(root, "unified")
			}
		case hasController(parts[1], "memory"): // v1
			dir, files = filepath.Join(root, "memory"), []string{"memory.limit_in_bytes"}
		default:
			continue
		}
		for p := path.Clean("/" + parts[2]); ; p = path.Dir(p) {
			for _, f := range files {
				take(filepath.Join(dir, p, f))
			}
			if p == "/" {
				break
			}
		}
	}
	return best
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}
