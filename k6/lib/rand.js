// sysbench's random numbers (src/sb_rand.c), for k6.
//
// Each distribution maps a uniform double in [0, 1) to an integer in [a, b] with sysbench's
// formula, constants and integer truncation: uniform, gaussian (sum of rand_spec_iter
// uniforms), special (rand_spec_pct / rand_spec_res), pareto (rand_pareto_h) and zipfian
// (rand_zipfian_exp; rejection-inversion as in sysbench 1.1). With rand_seed = 0 the source
// is Math.random; otherwise a seeded generator (sfc32), one stream per VU, so a run is
// repeatable for a given seed and VU.

export const RAND_TYPES = ['uniform', 'gaussian', 'special', 'pareto', 'zipfian'];

// sfc32: a small, fast 32-bit generator with a 128-bit state (PractRand-tested).
export function seededSource(seed, stream) {
  let a = (seed >>> 0) ^ 0x9e3779b9;
  let b = (stream >>> 0) ^ 0x243f6a88;
  let c = 0xb7e15162;
  let d = 1;
  const next = () => {
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  for (let i = 0; i < 16; i++) next(); // mix the seed in
  return next;
}

function helper1(x) { // log(1 + x) / x
  return Math.abs(x) > 1e-8 ? Math.log1p(x) / x : 1 - x * (0.5 - x * ((1 / 3) - 0.25 * x));
}
function helper2(x) { // (exp(x) - 1) / x
  return Math.abs(x) > 1e-8 ? Math.expm1(x) / x : 1 + x * 0.5 * (1 + x * (1 / 3) * (1 + 0.25 * x));
}
function hIntegral(x, e) { const logX = Math.log(x); return helper2((1 - e) * logX) * logX; }
function h(x, e) { return Math.exp(-e * Math.log(x)); }
function hIntegralInverse(x, e) {
  let t = x * (1 - e);
  if (t < -1) t = -1;
  return Math.exp(helper1(t) * x);
}

// Math.floor read once: inside the per-event closures a global lookup costs more than the call
// (docs/bench.md).
const floor = Math.floor;

// makeRand(opts, random) -> { uniform(a, b), def(a, b), string(template) }
// opts: rand_type, rand_spec_iter, rand_spec_pct, rand_spec_res, rand_pareto_h, rand_zipfian_exp
// perDigit: one random number per '#' or '@' of a string template, as sysbench draws them
// (sb_rand_str); used with rand_seed, so that a seeded run draws what sysbench would.
// Without it a run of digits takes one random number per 15 digits (each digit still
// uniform and independent), which is several times faster.
export function makeRand(opts, random, perDigit = false) {
  const iter = opts.rand_spec_iter;
  const iterMult = 1.0 / iter;
  const pctMult = opts.rand_spec_pct / 100.0;
  const pct2Mult = opts.rand_spec_pct / 200.0;
  const resMult = 100.0 / (100.0 - opts.rand_spec_res);
  const paretoPower = Math.log(opts.rand_pareto_h) / Math.log(1.0 - opts.rand_pareto_h);
  const zExp = opts.rand_zipfian_exp;
  const zS = 2 - hIntegralInverse(hIntegral(2.5, zExp) - h(2, zExp), zExp);
  const zX1 = hIntegral(1.5, zExp) - 1;

  const uniform = (a, b) => a + floor(random() * (b - a + 1));

  const gaussian = (a, b) => {
    const t = b - a + 1;
    let sum = 0;
    for (let i = 0; i < iter; i++) sum += random() * t;
    return a + floor(sum * iterMult);
  };

  const special = (a, b) => {
    const t = b - a;
    const rnd = random();
    if (rnd * t * resMult < t) {
      // (100 - rand_spec_res)% of values: gaussian over the whole range
      let sum = 0;
      for (let i = 0; i < iter; i++) sum += random();
      return a + floor(sum * t * iterMult);
    }
    // rand_spec_res% of values: uniform over rand_spec_pct% of the range, centred
    const d = t * pctMult;
    const res = rnd * (d + 1) + t / 2 - t * pct2Mult;
    return a + floor(res);
  };

  const pareto = (a, b) => a + floor((b - a + 1) * Math.pow(random(), paretoPower));

  const zipfian = (a, b) => {
    const n = b - a + 1;
    const hN = hIntegral(n + 0.5, zExp);
    for (;;) {
      const u = hN + random() * (zX1 - hN);
      const x = hIntegralInverse(u, zExp);
      let k = floor(x + 0.5);
      if (k < 1) k = 1; else if (k > n) k = n;
      if (k - x <= zS || u >= hIntegral(k + 0.5, zExp) - h(k, zExp)) return a + k - 1;
    }
  };

  const byName = { uniform, gaussian, special, pareto, zipfian };
  const def = byName[opts.rand_type];
  if (!def) throw new Error(`rand_type '${opts.rand_type}' is not valid (valid: ${RAND_TYPES.join(', ')})`);

  // sysbench.rand.string: '#' -> a digit, '@' -> a lowercase letter, anything else kept.
  // A template is compiled once into runs of one kind.
  const LETTERS = 'abcdefghijklmnopqrstuvwxyz';
  const POW10 = [1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];
  const compiled = new Map();
  const compile = (template) => {
    const runs = [];
    for (let i = 0; i < template.length;) {
      const ch = template[i];
      let j = i;
      while (j < template.length && template[j] === ch) j++;
      if (ch === '#') runs.push([0, j - i]);
      else if (ch === '@') runs.push([1, j - i]);
      else if (runs.length && runs[runs.length - 1][0] === 2) runs[runs.length - 1][1] += template.slice(i, j);
      else runs.push([2, template.slice(i, j)]);
      i = j;
    }
    compiled.set(template, runs);
    return runs;
  };
  const string = (template) => {
    const runs = compiled.get(template) || compile(template);
    let out = '';
    for (let r = 0; r < runs.length; r++) {
      const kind = runs[r][0];
      const v = runs[r][1];
      if (kind === 0 && perDigit) {
        for (let n = 0; n < v; n++) out += String.fromCharCode(48 + floor(random() * 10));
      } else if (kind === 0) {
        for (let n = v; n > 0; n -= 15) {
          const m = n < 15 ? n : 15;
          out += String(floor(random() * POW10[m])).padStart(m, '0');
        }
      } else if (kind === 1) {
        for (let n = 0; n < v; n++) out += LETTERS[floor(random() * 26)];
      } else {
        out += v;
      }
    }
    return out;
  };

  return { uniform, def, string, byName };
}
