// For tests/test_trust.py: how many random numbers k6/lib/rand.js (k6/x/tbs's Go random
// numbers) draws for sysbench's c template, seeded (rand_seed: one per '#', as sysbench's
// sb_rand_str) and unseeded. Prints "DRAWS seeded=<n> unseeded=<n> C=<value>" once.
import { makeRand } from '../../k6/lib/rand.js';
import { parseOptions } from '../../k6/lib/config.js';
import { C_TEMPLATE } from '../../k6/lib/sysbench.js';

export const options = { vus: 1, iterations: 1 };

export function setup() {
  const seeded = makeRand(parseOptions({ rand_seed: '7' }), 1);
  const c = seeded.string(C_TEMPLATE);
  const plain = makeRand(parseOptions({}), 1);
  plain.string(C_TEMPLATE);
  console.log(`DRAWS seeded=${seeded.draws()} unseeded=${plain.draws()} C=${c}`);
}

export default function () {}
