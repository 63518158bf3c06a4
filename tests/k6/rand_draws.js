// Draws from k6/lib/rand.js for tests/test_rand.py: prints "COUNTS v:c,v:c,..." once.
import { makeRand } from '../../k6/lib/rand.js';
import { parseOptions } from '../../k6/lib/config.js';

export const options = { vus: 1, iterations: 1 };

export function setup() {
  const env = { ...__ENV };
  const n = Number(env.N || 1000);
  const draws = Number(env.DRAWS || 200000);
  delete env.N; delete env.DRAWS;
  const o = parseOptions(Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith('rand_'))));
  const r = makeRand(o, 1);
  const counts = {};
  for (let i = 0; i < draws; i++) {
    const v = r.def(1, n);
    counts[v] = (counts[v] || 0) + 1;
  }
  console.log(`COUNTS ${Object.entries(counts).map(([k, c]) => `${k}:${c}`).join(',')}`);
}

export default function () {}
