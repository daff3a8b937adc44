package budget

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCgroupLimitBelowTheRoot: a limit set on the process's own group, or
// on any group above it, bounds the budget, in cgroup v2 (memory.max and
// memory.high, "max" meaning none), in v1 (memory.limit_in_bytes, its
// huge "no limit" value passed over) and in a hybrid; a group that does not
// exist under the mount is passed over. Before, only the mount's root was
// read: a systemd unit's MemoryMax= of 200 MiB left a budget of 6 GiB.
func TestCgroupLimitBelowTheRoot(t *testing.T) {
	write := func(t *testing.T, root, rel, body string) {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const mib = 1 << 20
	cases := []struct {
		name  string
		files map[string]string
		self  string
		want  int64
	}{
		{"v2 own group", map[string]string{"cgroup.controllers": "memory", "memory.max": "max",
			"system.slice/memory.max": "max", "system.slice/ht.service/memory.max": "209715200"}, "0::/system.slice/ht.service\n", 200 * mib},
		{"v2 parent's", map[string]string{"cgroup.controllers": "memory", "a/memory.max": "104857600", "a/b/memory.max": "max", "a/b/memory.high": "max"}, "0::/a/b\n", 100 * mib},
		{"v2 high", map[string]string{"cgroup.controllers": "memory", "a/memory.max": "max", "a/memory.high": "52428800"}, "0::/a\n", 50 * mib},
		{"v2 none", map[string]string{"cgroup.controllers": "memory", "a/memory.max": "max"}, "0::/a\n", 0},
		{"v1 nested", map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712", "memory/x/memory.limit_in_bytes": "9223372036854771712",
			"memory/x/y/memory.limit_in_bytes": "209715200"}, "4:memory:/x/y\n0::/\n", 200 * mib},
		{"v1 joined controllers", map[string]string{"memory/x/memory.limit_in_bytes": "104857600"}, "3:cpu,memory:/x\n", 100 * mib},
		{"namespaced", map[string]string{"cgroup.controllers": "memory", "memory.max": "209715200"}, "0::/kubepods/pod1/c1\n", 200 * mib},
		{"hybrid unified", map[string]string{"unified/a/memory.max": "104857600", "memory/memory.limit_in_bytes": "9223372036854771712"}, "4:memory:/\n0::/a\n", 100 * mib},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for rel, body := range tc.files {
				write(t, root, rel, body)
			}
			if got := cgroupLimit(root, tc.self); got != tc.want {
				t.Errorf("limit %d; want %d", got, tc.want)
			}
		})
	}
}
