package tbs

// Mark records a time or figure under name; the first write wins (every VU crossing a step
// boundary offers it, one of them is first).
func (m *Module) Mark(name string, v float64) {
	m.r.mu.Lock()
	defer m.r.mu.Unlock()
	if m.r.marks == nil {
		m.r.marks = map[string]float64{}
	}
	if _, ok := m.r.marks[name]; !ok {
		m.r.marks[name] = v
	}
}

// Marks returns every mark.
func (m *Module) Marks() map[string]float64 {
	m.r.mu.Lock()
	defer m.r.mu.Unlock()
	out := make(map[string]float64, len(m.r.marks))
	for k, v := range m.r.marks {
		out[k] = v
	}
	return out
}
