package tbs

// Mark records a time or figure under name; the first write wins (every VU crossing a step
// boundary offers it, one of them is first).
func (m *Module) Mark(name string, v float64) { setOnce(m.r, &m.r.marks, name, v) }

// Marks returns every mark.
func (m *Module) Marks() map[string]float64 { return copyOf(m.r, &m.r.marks) }

// Note records a text (e.g. JSON) under name, for handleSummary, which runs in another
// JavaScript runtime than the VU that wrote it; the first write wins, as with marks.
func (m *Module) Note(name, text string) { setOnce(m.r, &m.r.notes, name, text) }

// Notes returns every note.
func (m *Module) Notes() map[string]string { return copyOf(m.r, &m.r.notes) }

func setOnce[V any](r *root, into *map[string]V, name string, v V) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if *into == nil {
		*into = map[string]V{}
	}
	if _, ok := (*into)[name]; !ok {
		(*into)[name] = v
	}
}

func copyOf[V any](r *root, from *map[string]V) map[string]V {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]V, len(*from))
	for k, v := range *from {
		out[k] = v
	}
	return out
}

// NoteText returns the note called name, or null when there is none: one note, without
// copying every note into a new object as notes() does (a VU reads a few at init).
func (m *Module) NoteText(name string) any {
	m.r.mu.Lock()
	defer m.r.mu.Unlock()
	if t, ok := m.r.notes[name]; ok {
		return t
	}
	return nil
}
