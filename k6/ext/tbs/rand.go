package tbs

// sysbench's random numbers (src/sb_rand.c), for the VUs: one place for them, in Go.
//
// Each distribution maps a uniform double in [0, 1) to an integer in [a, b] with sysbench's
// formula, constants and integer truncation: uniform, gaussian (sum of rand_spec_iter
// uniforms), special (rand_spec_pct / rand_spec_res), pareto (rand_pareto_h) and zipfian
// (rand_zipfian_exp; rejection-inversion as in sysbench 1.1). The arithmetic is done in
// float64 in the order JavaScript did it before these functions moved here (commit 3fe6b40's
// k6/lib/rand.js), so a seeded run draws the same values as then.
//
// With rand_seed = 0 the source is math/rand/v2's (seeded by the runtime, as Math.random);
// otherwise sfc32, one stream per VU and step, so a run is repeatable for a given seed.
//
// Why Go: a point select draws about five uniform numbers (the table, and sysbench's default
// `special` key takes one, or thirteen a quarter of the time); in JavaScript each was a native
// Math.random call plus Math.floor and interpreted arithmetic, several µs per event on one
// client core, and a c/pad string was built one character at a time (client-mode prepare ran
// at 26k rows/s on one k6 core). Here a draw is one native call and a string one more.

import (
	"fmt"
	"math"
	randv2 "math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/grafana/sobek"
)

// randTypes are the valid rand_type values (k6/lib/rand.js exports them to config.js).
var randTypes = []string{"uniform", "gaussian", "special", "pareto", "zipfian"}

// RandTypes returns the valid rand_type values.
func (m *Module) RandTypes() []string { return slices.Clone(randTypes) }

// sfc32: a small, fast 32-bit generator with a 128-bit state (PractRand-tested).
type sfc32 struct{ a, b, c, d uint32 }

func newSfc32(seed, stream uint32) *sfc32 {
	s := &sfc32{a: seed ^ 0x9e3779b9, b: stream ^ 0x243f6a88, c: 0xb7e15162, d: 1}
	for i := 0; i < 16; i++ { // mix the seed in
		s.next()
	}
	return s
}

func (s *sfc32) next() float64 {
	t := s.a + s.b + s.d
	s.d++
	s.a = s.b ^ (s.b >> 9)
	s.b = s.c + (s.c << 3)
	s.c = (s.c << 21) | (s.c >> 11)
	s.c += t
	return float64(t) / 4294967296
}

// Rand is one VU's random numbers.
type Rand struct {
	random   func() float64
	draws    uint64 // uniform numbers drawn (tests: one per '#' when seeded)
	perDigit bool
	def      func(a, b float64) float64

	iter, iterMult, pctMult, pct2Mult, resMult, paretoPower float64
	zExp, zS, zX1                                           float64
	compiled                                                map[string][]strRun
}

// RandSpec is what makeRand needs: the options under their names, and the VU's stream.
type RandSpec struct {
	Type     string  `js:"rand_type"`
	SpecIter int     `js:"rand_spec_iter"`
	SpecPct  float64 `js:"rand_spec_pct"`
	SpecRes  float64 `js:"rand_spec_res"`
	ParetoH  float64 `js:"rand_pareto_h"`
	ZipfExp  float64 `js:"rand_zipfian_exp"`
	Seed     int64   `js:"rand_seed"` // 0: unseeded
	Stream   uint32  `js:"stream"`
}

func helper1(x float64) float64 { // log(1 + x) / x
	if math.Abs(x) > 1e-8 {
		return math.Log1p(x) / x
	}
	return 1 - x*(0.5-x*((1.0/3)-0.25*x))
}

func helper2(x float64) float64 { // (exp(x) - 1) / x
	if math.Abs(x) > 1e-8 {
		return math.Expm1(x) / x
	}
	return 1 + x*0.5*(1+x*(1.0/3)*(1+0.25*x))
}

func hIntegral(x, e float64) float64 { logX := math.Log(x); return helper2((1-e)*logX) * logX }
func hFn(x, e float64) float64       { return math.Exp(-e * math.Log(x)) }
func hIntegralInverse(x, e float64) float64 {
	t := x * (1 - e)
	if t < -1 {
		t = -1
	}
	return math.Exp(helper1(t) * x)
}

// NewRand makes the random numbers of one VU (and step).
func NewRand(s RandSpec) (*Rand, error) {
	r := &Rand{perDigit: s.Seed != 0, compiled: map[string][]strRun{}}
	if s.Seed != 0 {
		src := newSfc32(uint32(uint64(s.Seed)), s.Stream) //nolint:gosec // seed taken mod 2^32, as JavaScript's >>> 0
		r.random = func() float64 { r.draws++; return src.next() }
	} else {
		r.random = func() float64 { r.draws++; return randv2.Float64() }
	}
	if s.SpecIter < 1 {
		return nil, fmt.Errorf("rand_spec_iter %d is not valid (valid: an integer >= 1)", s.SpecIter)
	}
	r.iter = float64(s.SpecIter)
	r.iterMult = 1.0 / r.iter
	r.pctMult = s.SpecPct / 100.0
	r.pct2Mult = s.SpecPct / 200.0
	r.resMult = 100.0 / (100.0 - s.SpecRes)
	r.paretoPower = math.Log(s.ParetoH) / math.Log(1.0-s.ParetoH)
	r.zExp = s.ZipfExp
	r.zS = 2 - hIntegralInverse(hIntegral(2.5, r.zExp)-hFn(2, r.zExp), r.zExp)
	r.zX1 = hIntegral(1.5, r.zExp) - 1
	switch s.Type {
	case "uniform":
		r.def = r.Uniform
	case "gaussian":
		r.def = r.Gaussian
	case "special":
		r.def = r.Special
	case "pareto":
		r.def = r.Pareto
	case "zipfian":
		r.def = r.Zipfian
	default:
		return nil, fmt.Errorf("rand_type '%s' is not valid (valid: %s)", s.Type, strings.Join(randTypes, ", "))
	}
	return r, nil
}

// Uniform is sysbench's sb_rand_uniform over [a, b].
func (r *Rand) Uniform(a, b float64) float64 { return a + math.Floor(r.random()*(b-a+1)) }

// Gaussian is sb_rand_gaussian: the mean of rand_spec_iter uniforms.
func (r *Rand) Gaussian(a, b float64) float64 {
	t := b - a + 1
	sum := 0.0
	for i := 0.0; i < r.iter; i++ {
		sum += r.random() * t
	}
	return a + math.Floor(sum*r.iterMult)
}

// Special is sb_rand_special: (100 - rand_spec_res)% of values gaussian over the whole
// range, rand_spec_res% uniform over rand_spec_pct% of it, centred.
func (r *Rand) Special(a, b float64) float64 {
	t := b - a
	rnd := r.random()
	if rnd*t*r.resMult < t {
		sum := 0.0
		for i := 0.0; i < r.iter; i++ {
			sum += r.random()
		}
		return a + math.Floor(sum*t*r.iterMult)
	}
	d := t * r.pctMult
	res := rnd*(d+1) + t/2 - t*r.pct2Mult
	return a + math.Floor(res)
}

// Pareto is sb_rand_pareto.
func (r *Rand) Pareto(a, b float64) float64 {
	return a + math.Floor((b-a+1)*math.Pow(r.random(), r.paretoPower))
}

// Zipfian is sysbench 1.1's sb_rand_zipfian (rejection-inversion sampling).
func (r *Rand) Zipfian(a, b float64) float64 {
	n := b - a + 1
	hN := hIntegral(n+0.5, r.zExp)
	for {
		u := hN + r.random()*(r.zX1-hN)
		x := hIntegralInverse(u, r.zExp)
		k := math.Floor(x + 0.5)
		if k < 1 {
			k = 1
		} else if k > n {
			k = n
		}
		if k-x <= r.zS || u >= hIntegral(k+0.5, r.zExp)-hFn(k, r.zExp) {
			return a + k - 1
		}
	}
}

// Def is sysbench.rand.default: the distribution of rand_type.
func (r *Rand) Def(a, b float64) float64 { return r.def(a, b) }

// strRun is a run of one kind in a string template: digits ('#'), letters ('@') or text.
type strRun struct {
	kind int // 0 digits, 1 letters, 2 literal
	n    int
	text string
}

func compileTemplate(template string) []strRun {
	var runs []strRun
	for i := 0; i < len(template); {
		ch := template[i]
		j := i
		for j < len(template) && template[j] == ch {
			j++
		}
		switch {
		case ch == '#':
			runs = append(runs, strRun{kind: 0, n: j - i})
		case ch == '@':
			runs = append(runs, strRun{kind: 1, n: j - i})
		case len(runs) > 0 && runs[len(runs)-1].kind == 2:
			runs[len(runs)-1].text += template[i:j]
		default:
			runs = append(runs, strRun{kind: 2, text: template[i:j]})
		}
		i = j
	}
	return runs
}

var pow10 = [16]float64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

const letters = "abcdefghijklmnopqrstuvwxyz"

// String is sysbench.rand.string: '#' a digit, '@' a lowercase letter, anything else kept.
// Seeded, one random number per '#' or '@', as sysbench's sb_rand_str draws them (a seeded
// run draws what sysbench would); unseeded, a run of digits takes one number per 15 digits
// (each digit still uniform and independent), which is several times faster.
func (r *Rand) String(template string) string {
	return string(r.appendString(make([]byte, 0, len(template)), template))
}

// appendString appends String(template) to out.
func (r *Rand) appendString(out []byte, template string) []byte {
	runs, ok := r.compiled[template]
	if !ok {
		runs = compileTemplate(template)
		r.compiled[template] = runs
	}
	for _, run := range runs {
		switch {
		case run.kind == 0 && r.perDigit:
			for n := 0; n < run.n; n++ {
				out = append(out, byte('0'+int(math.Floor(r.random()*10))))
			}
		case run.kind == 0:
			for n := run.n; n > 0; n -= 15 {
				m := min(n, 15)
				v := strconv.FormatInt(int64(math.Floor(r.random()*pow10[m])), 10)
				for p := len(v); p < m; p++ {
					out = append(out, '0')
				}
				out = append(out, v...)
			}
		case run.kind == 1:
			for n := 0; n < run.n; n++ {
				out = append(out, letters[int(math.Floor(r.random()*26))])
			}
		default:
			out = append(out, run.text...)
		}
	}
	return out
}

// Rows is the VALUES list of prepare's multi-row INSERT (k6/lib/sysbench.js insertRowsSql) for
// ids first..last: `(id, k, 'c', 'pad')` per row, comma-separated, without the id when autoInc.
// Per row it draws k from the default distribution over 1..tableSize, then c, then pad from
// their templates, in that order. The text and the draws are those of building the rows one
// by one in JavaScript, which made three native calls and a template string per row; this is
// one call per INSERT, with no string per value (prepare's client CPU per row: docs/bench.md).
func (r *Rand) Rows(first, last int64, tableSize float64, autoInc bool, cTemplate, padTemplate string) string {
	if last < first {
		return ""
	}
	out := make([]byte, 0, (last-first+1)*int64(len(cTemplate)+len(padTemplate)+32))
	for i := first; i <= last; i++ {
		k := r.def(1, tableSize)
		if i > first {
			out = append(out, ',')
		}
		out = append(out, '(')
		if !autoInc {
			out = strconv.AppendInt(out, i, 10)
			out = append(out, ", "...)
		}
		out = strconv.AppendFloat(out, k, 'f', -1, 64)
		out = append(out, ", '"...)
		out = r.appendString(out, cTemplate)
		out = append(out, "', '"...)
		out = r.appendString(out, padTemplate)
		out = append(out, "')"...)
	}
	return string(out)
}

// Rand returns a VU's random numbers as an object of native functions (no reflection
// wrapper per call): uniform(a, b), def(a, b), string(template), rows(first, last, tableSize,
// autoInc, cTemplate, padTemplate), draws() and byName[type](a, b).
func (m *Module) Rand(s RandSpec) (*sobek.Object, error) {
	r, err := NewRand(s)
	if err != nil {
		return nil, err
	}
	rt := m.vu.Runtime()
	num := func(f func(a, b float64) float64) func(sobek.FunctionCall) sobek.Value {
		return func(c sobek.FunctionCall) sobek.Value {
			return rt.ToValue(f(c.Argument(0).ToFloat(), c.Argument(1).ToFloat()))
		}
	}
	o := rt.NewObject()
	set := func(obj *sobek.Object, k string, v any) {
		if err == nil {
			err = obj.Set(k, v)
		}
	}
	set(o, "uniform", num(r.Uniform))
	set(o, "def", num(r.def))
	set(o, "string", func(c sobek.FunctionCall) sobek.Value { return rt.ToValue(r.String(c.Argument(0).String())) })
	set(o, "rows", func(c sobek.FunctionCall) sobek.Value {
		return rt.ToValue(r.Rows(c.Argument(0).ToInteger(), c.Argument(1).ToInteger(), c.Argument(2).ToFloat(),
			c.Argument(3).ToBoolean(), c.Argument(4).String(), c.Argument(5).String()))
	})
	set(o, "draws", func(sobek.FunctionCall) sobek.Value { return rt.ToValue(float64(r.draws)) })
	by := rt.NewObject()
	set(by, "uniform", num(r.Uniform))
	set(by, "gaussian", num(r.Gaussian))
	set(by, "special", num(r.Special))
	set(by, "pareto", num(r.Pareto))
	set(by, "zipfian", num(r.Zipfian))
	set(o, "byName", by)
	if err == nil {
		err = hide(rt, o, "_rand", r) // for loop()
	}
	return o, err
}
