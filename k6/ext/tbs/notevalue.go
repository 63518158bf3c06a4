package tbs

// NoteValue: a note that holds JSON, handed to a VU as a fresh JavaScript value built in Go.
//
// Every VU reads its options (and its workload, the contract's timing) from notes the first
// runtime wrote. JSON.parse tokenizes the text with encoding/json's Decoder, one interface
// value per token, again in every VU. Here the text is parsed once per process into a tree that
// keeps the keys' order, and each call builds the VU's own objects and arrays from it, as
// JSON.parse would have made them, without tokenizing again (the figures: docs/bench.md,
// "Measured on 2026-11-26 (night)", issue 31).

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/grafana/sobek"
)

// jsonNode is one JSON value: an object (keys in the text's order), an array or a scalar.
type jsonNode struct {
	keys   []string    // an object's keys
	elems  []*jsonNode // an object's values (by keys) or an array's elements
	array  bool        // elems is an array
	object bool        // keys/elems is an object
	scalar any         // string, float64, bool or nil (null)
}

// parseNote parses text into a jsonNode tree, the whole text one value.
func parseNote(text string) (*jsonNode, error) {
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	n, err := decodeNode(d)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("k6/x/tbs: noteValue: text after the JSON value")
	}
	return n, nil
}

func decodeNode(d *json.Decoder) (*jsonNode, error) {
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch v := t.(type) {
	case json.Delim:
		n := &jsonNode{object: v == '{', array: v == '['}
		for d.More() {
			if n.object {
				k, err := d.Token()
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, k.(string))
			}
			e, err := decodeNode(d)
			if err != nil {
				return nil, err
			}
			n.elems = append(n.elems, e)
		}
		if _, err := d.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	case json.Number:
		f, err := v.Float64()
		if err != nil {
			return nil, err
		}
		return &jsonNode{scalar: f}, nil
	default: // string, bool, nil
		return &jsonNode{scalar: v}, nil
	}
}

// value builds n in rt: new objects and arrays, as JSON.parse makes them.
func (n *jsonNode) value(rt *sobek.Runtime) sobek.Value {
	switch {
	case n.object:
		o := rt.NewObject()
		for i, k := range n.keys {
			_ = o.Set(k, n.elems[i].value(rt))
		}
		return o
	case n.array:
		vs := make([]any, len(n.elems))
		for i, e := range n.elems {
			vs[i] = e.value(rt)
		}
		return rt.NewArray(vs...)
	case n.scalar == nil:
		return sobek.Null()
	default:
		return rt.ToValue(n.scalar)
	}
}

// NoteValue returns the note called name, which holds JSON, as a new JavaScript value (what
// JSON.parse(noteText(name)) gives), or null when there is no such note. The text is parsed
// once per process; a note that is not JSON throws.
func (m *Module) NoteValue(name string) (sobek.Value, error) {
	m.r.mu.Lock()
	text, ok := m.r.notes[name]
	n := m.r.parsed[name]
	m.r.mu.Unlock()
	if !ok {
		return sobek.Null(), nil
	}
	if n == nil {
		var err error
		if n, err = parseNote(text); err != nil {
			return nil, fmt.Errorf("k6/x/tbs: note %q is not JSON: %w", name, err)
		}
		m.r.mu.Lock()
		if m.r.parsed == nil {
			m.r.parsed = map[string]*jsonNode{}
		}
		m.r.parsed[name] = n
		m.r.mu.Unlock()
	}
	return n.value(m.vu.Runtime()), nil
}
