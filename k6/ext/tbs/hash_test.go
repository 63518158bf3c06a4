package tbs

import "testing"

// The values JavaScript's hashText gave before it became native (Math.imul over charCodeAt,
// computed with node): a run's seed from its testid must not change.
func TestHashIsTheJavaScriptFNV1a(t *testing.T) {
	for s, want := range map[string]uint32{
		"":                 2166136261,
		"a":                3826002220,
		"tbs-20261126-abc": 2858430962,
		"é€漢":              2680455918,
		`[["k","v"]]`:      1503581362,
	} {
		if got := fnv1a16(s); got != want {
			t.Errorf("hash(%q) = %d, want %d", s, got, want)
		}
	}
}

// EnvKey names an environment: the same entries give the same key whatever their order, and
// any change of a name or a value (a boundary moved between them included) gives another.
func TestEnvKeyNamesTheEnvironment(t *testing.T) {
	m := &Module{}
	base := map[string]string{"threads": "8", "mysql_port": "4000", "PATH": "/usr/bin"}
	same := map[string]string{"PATH": "/usr/bin", "mysql_port": "4000", "threads": "8"}
	if a, b := m.EnvKey(base), m.EnvKey(same); a != b {
		t.Errorf("the same entries gave %q and %q", a, b)
	}
	seen := map[string]string{m.EnvKey(base): "base"}
	for name, env := range map[string]map[string]string{
		"a value changed": {"threads": "16", "mysql_port": "4000", "PATH": "/usr/bin"},
		"an entry added":  {"threads": "8", "mysql_port": "4000", "PATH": "/usr/bin", "tables": "8"},
		"an entry gone":   {"threads": "8", "mysql_port": "4000"},
		"boundary a|bc":   {"a": "bc"},
		"boundary ab|c":   {"ab": "c"},
		"empty":           {},
	} {
		k := m.EnvKey(env)
		if other, dup := seen[k]; dup {
			t.Errorf("%s and %s have the same key %q", name, other, k)
		}
		seen[k] = name
	}
}
