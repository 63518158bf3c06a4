// For tests/test_trust.py: how many random numbers k6/lib/rand.js draws for sysbench's c and
// pad templates, seeded (rand_seed: one per '#', as sysbench's sb_rand_str) and unseeded.
// Prints "DRAWS seeded=<n> unseeded=<n> C=<value>" once.
import { makeRand, seededSource } from '../../k6/lib/rand.js';
import { parseOptions } from '../../k6/lib/config.js';
import { C_TEMPLATE } from '../../k6/lib/sysbench.js';

export const options = { vus: 1, iterations: 1 };

export function setup() {
  const o = parseOptions({ rand_seed: '7' });
  const count = (src) => { const f = () => { f.n++; return src(); }; f.n = 0; return f; };
  const seeded = count(seededSource(7, 1));
  const c = makeRand(o, seeded, true).string(C_TEMPLATE);
  const plain = count(Math.random);
  makeRand(o, plain, false).string(C_TEMPLATE);
  console.log(`DRAWS seeded=${seeded.n} unseeded=${plain.n} C=${c}`);
}

export default function () {}
