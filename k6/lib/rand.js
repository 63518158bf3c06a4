// sysbench's random numbers (src/sb_rand.c), for k6: made in Go (k6/x/tbs, k6/ext/tbs/rand.go),
// where each draw is one native call instead of Math.random, Math.floor and interpreted
// arithmetic, and a c/pad string is built in one call.
//
// makeRand(o, stream) -> { uniform(a, b), def(a, b), string(template),
//   rows(first, last, tableSize, autoInc, cTemplate, padTemplate), draws(), byName }
// o: the options (rand_type, rand_spec_iter, rand_spec_pct, rand_spec_res, rand_pareto_h,
// rand_zipfian_exp, rand_seed). With rand_seed = 0 the numbers are unseeded, as Math.random;
// otherwise a seeded generator (sfc32), one `stream` per VU (and step), so a run is
// repeatable for a given seed and VU, and strings take one random number per '#' or '@' as
// sysbench's sb_rand_str draws them.
import tbs from 'k6/x/tbs';

export const RAND_TYPES = tbs.randTypes();

export function makeRand(o, stream = 0) {
  return tbs.rand({
    rand_type: o.rand_type, rand_spec_iter: o.rand_spec_iter, rand_spec_pct: o.rand_spec_pct,
    rand_spec_res: o.rand_spec_res, rand_pareto_h: o.rand_pareto_h, rand_zipfian_exp: o.rand_zipfian_exp,
    rand_seed: o.rand_seed || 0, stream: stream >>> 0,
  });
}
