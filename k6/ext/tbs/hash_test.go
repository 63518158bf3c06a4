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
