package tbs

import (
	"hash/fnv"
	"io"
	"maps"
	"slices"
	"strconv"
	"unicode/utf16"
)

// Hash is FNV-1a (32 bits) of s's UTF-16 code units, as JavaScript's charCodeAt gives them:
// what k6/lib/config.js hashText computed in JavaScript (a run's seed from its testid),
// natively. In the interpreter the loop was a third of a VU's init CPU when every VU hashed its
// whole environment (now EnvKey; docs/bench.md, issue 31).
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

// EnvKey is a key of a VU's environment (__ENV), the name of the note that keeps the options
// parsed from it (k6/lib/config.js vuOptions): FNV-1a (64 bits) of its entries sorted by name,
// each name and value ended by a NUL. In JavaScript the same key took a sorted copy of __ENV,
// whose every read goes through sobek's reflection on k6's Go map, and its JSON, in every VU;
// here it is computed in Go, a small part of that cost (the figures, per VU and for a large
// run's set-up: docs/bench.md, "Measured on 2026-11-26 (night)", issue 31).
func (m *Module) EnvKey(env map[string]string) string {
	keys := slices.Sorted(maps.Keys(env))
	h := fnv.New64a()
	for _, k := range keys {
		_, _ = io.WriteString(h, k)
		_, _ = h.Write([]byte{0})
		_, _ = io.WriteString(h, env[k])
		_, _ = h.Write([]byte{0})
	}
	return strconv.FormatUint(h.Sum64(), 36)
}
