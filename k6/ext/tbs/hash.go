package tbs

import "unicode/utf16"

// Hash is FNV-1a (32 bits) of s's UTF-16 code units, as JavaScript's charCodeAt gives them:
// what k6/lib/config.js hashText computed in JavaScript (a run's seed from its testid, the key
// of the options note), natively. In the interpreter the loop was a third of a VU's init CPU:
// every VU hashes the whole environment once (docs/bench.md, issue 31).
func (m *Module) Hash(s string) float64 { return float64(fnv1a16(s)) }

func fnv1a16(s string) uint32 {
	h := uint32(2166136261)
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		for i := 0; i < len(s); i++ {
			h = (h ^ uint32(s[i])) * 16777619
		}
		return h
	}
	for _, u := range utf16.Encode([]rune(s)) {
		h = (h ^ uint32(u)) * 16777619
	}
	return h
}
