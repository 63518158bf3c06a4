package jstest

import "testing"

// tbs.noteValue gives what JSON.parse of the note's text gives (the same values, types, key
// order and prototypes), a new value at every call, null for a note that does not exist, and
// an error naming a note that is not JSON.
func TestNoteValueIsWhatJSONParseGives(t *testing.T) {
	h := New(t, "")
	got := h.Run(`(() => {
  const tbs = __go['k6/x/tbs'];
  const text = JSON.stringify({ b: 1, a: [1, 2.5, 'x', null, true, { z: [], y: {} }], 'é': 'ünï 漢', n: null, f: false,
    neg: -3, big: 1e21, small: 5e-7, nested: { threads: [150, 300, 600], ignore: ['1062', 2013] } });
  tbs.note('j', text);
  const a = tbs.noteValue('j');
  const b = JSON.parse(text);
  const out = [];
  if (JSON.stringify(a) !== JSON.stringify(b)) out.push('values: ' + JSON.stringify(a));
  if (Object.keys(a).join() !== Object.keys(b).join()) out.push('key order: ' + Object.keys(a).join());
  if (!Array.isArray(a.a) || !Array.isArray(a.a[5].z) || !Array.isArray(a.nested.threads)) out.push('arrays');
  if (Object.getPrototypeOf(a) !== Object.prototype || Object.getPrototypeOf(a.a) !== Array.prototype) out.push('prototypes');
  if (typeof a.b !== 'number' || typeof a.a[2] !== 'string' || a.n !== null || a.f !== false || a.a[4] !== true) out.push('types');
  if (a.nested.threads.indexOf(300) !== 1 || Math.max(...a.nested.threads) !== 600) out.push('array methods');
  a.a.push(9); a.b = 2; a.nested.threads[0] = 1;
  const c = tbs.noteValue('j');
  if (c.a.length !== 6 || c.b !== 1 || c.nested.threads[0] !== 150) out.push('not a new value: ' + JSON.stringify(c));
  if (tbs.noteValue('no such note') !== null) out.push('a missing note is not null');
  tbs.note('bad', '{"x": ');
  let msg = '';
  try { tbs.noteValue('bad'); } catch (e) { msg = String(e); }
  if (!/note "bad" is not JSON/.test(msg)) out.push('bad JSON: ' + (msg || 'no error'));
  tbs.note('trailing', '{} x');
  msg = '';
  try { tbs.noteValue('trailing'); } catch (e) { msg = String(e); }
  if (!/note "trailing" is not JSON/.test(msg)) out.push('text after the value: ' + (msg || 'no error'));
  return out.join('; ');
})()`).String()
	if got != "" {
		t.Fatal(got)
	}
}
