package tbs

import (
	"regexp"
	"strings"
	"testing"
)

// The distributions' agreement with sysbench 1.0.20 itself is tested through k6 against
// sysbench's own draws (tests/test_rand.py); these tests cover what only Go can see.

func spec(typ string, seed int64, stream uint32) RandSpec {
	return RandSpec{Type: typ, SpecIter: 12, SpecPct: 1, SpecRes: 75, ParetoH: 0.2, ZipfExp: 0.8,
		Seed: seed, Stream: stream}
}

func TestRandSeededRepeatsAndStreamsDiffer(t *testing.T) {
	for _, typ := range randTypes {
		a, _ := NewRand(spec(typ, 7, 3))
		b, _ := NewRand(spec(typ, 7, 3))
		c, _ := NewRand(spec(typ, 7, 4))
		same, differ := true, false
		for i := 0; i < 1000; i++ {
			x, y, z := a.Def(1, 1e6), b.Def(1, 1e6), c.Def(1, 1e6)
			same = same && x == y
			differ = differ || x != z
		}
		if !same || !differ {
			t.Errorf("%s: same seed and stream repeat: %v; another stream differs: %v", typ, same, differ)
		}
		if a.String(strings.Repeat("#", 30)) != b.String(strings.Repeat("#", 30)) {
			t.Errorf("%s: seeded strings differ", typ)
		}
	}
}

func TestRandWithinBounds(t *testing.T) {
	for _, typ := range randTypes {
		r, err := NewRand(spec(typ, 0, 0))
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := 1e9, -1e9
		for i := 0; i < 200000; i++ {
			v := r.Def(5, 14)
			if v != float64(int64(v)) {
				t.Fatalf("%s: %v is not an integer", typ, v)
			}
			lo, hi = min(lo, v), max(hi, v)
		}
		if lo < 5 || hi > 14 {
			t.Errorf("%s: drew %v..%v outside 5..14", typ, lo, hi)
		}
		if typ == "uniform" && (lo != 5 || hi != 14) {
			t.Errorf("uniform: drew %v..%v, want both ends 5 and 14", lo, hi)
		}
	}
}

func TestRandStringDraws(t *testing.T) {
	tpl := "###########-@@@-###########-x"
	seeded, _ := NewRand(spec("special", 7, 1))
	s := seeded.String(tpl)
	if !regexp.MustCompile(`^\d{11}-[a-z]{3}-\d{11}-x$`).MatchString(s) {
		t.Errorf("seeded string %q does not fit %q", s, tpl)
	}
	if seeded.draws != 25 { // one per '#' and '@', as sysbench's sb_rand_str
		t.Errorf("seeded: %d draws, want 25", seeded.draws)
	}
	plain, _ := NewRand(spec("special", 0, 1))
	s = plain.String(tpl)
	if !regexp.MustCompile(`^\d{11}-[a-z]{3}-\d{11}-x$`).MatchString(s) {
		t.Errorf("unseeded string %q does not fit %q", s, tpl)
	}
	if plain.draws != 5 { // one per run of up to 15 digits, one per letter
		t.Errorf("unseeded: %d draws, want 5", plain.draws)
	}
	// every digit position takes every value (leading zeros kept)
	seen := make([]map[byte]bool, 40)
	for i := range seen {
		seen[i] = map[byte]bool{}
	}
	for i := 0; i < 5000; i++ {
		for j, ch := range []byte(plain.String(strings.Repeat("#", 40))) {
			seen[j][ch] = true
		}
	}
	for j, m := range seen {
		if len(m) != 10 {
			t.Errorf("digit %d took %d values, want 10", j, len(m))
		}
	}
}

func TestRandBadSpec(t *testing.T) {
	if _, err := NewRand(spec("fancy", 0, 0)); err == nil || !strings.Contains(err.Error(), "'fancy'") ||
		!strings.Contains(err.Error(), "uniform, gaussian, special, pareto, zipfian") {
		t.Errorf("bad rand_type: %v", err)
	}
	s := spec("uniform", 0, 0)
	s.SpecIter = 0
	if _, err := NewRand(s); err == nil || !strings.Contains(err.Error(), "rand_spec_iter 0") {
		t.Errorf("bad rand_spec_iter: %v", err)
	}
}
