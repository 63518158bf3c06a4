// The run's identity: its testid, this process' place among the load generators, the load
// generator's host facts.
import tbs from 'k6/x/tbs';

// newTestId: a new testid from the launcher core (k6/ext/launch's NewTestID, the one place
// testids are made: UTC time and four hex digits), for a run given no -e testid (a stock
// `k6 run`; scripts/k6 and the other launchers give one).
export function newTestId() {
  return tbs.newTestId();
}

// segmentFraction('1/3') -> 0.333..: a point of a k6 execution segment (a fraction, a decimal or
// a whole number), as k6 writes them; the one parser of them in the scripts.
export function segmentFraction(x) {
  const [a, b] = String(x).split('/').map(Number);
  return b ? a / b : a;
}

// instanceOf(options) -> this process' place among the load generators of one run, from
// k6's execution segments (`--execution-segment`, `--execution-segment-sequence`, as
// `scripts/k6 run --instances N` and k6-operator pass them) and the `instance_id` tag:
// { id, instances, lane (the segment's index), segment, sequence }. A lone process is
// instance "0" of 1.
export function instanceOf(options) {
  const tags = (options && options.tags) || {};
  const segment = options && options.executionSegment ? String(options.executionSegment) : '';
  const sequence = options && options.executionSegmentSequence ? String(options.executionSegmentSequence) : '';
  let lane = 0;
  let instances = 1;
  if (sequence) {
    const points = sequence.split(',').map((x) => x.trim());
    instances = Math.max(1, points.length - 1);
    const from = segment.split(':')[0];
    const i = points.findIndex((p) => Math.abs(segmentFraction(p) - segmentFraction(from || '0')) < 1e-9);
    lane = i >= 0 ? i : 0;
  } else if (segment) {
    const [from, to] = segment.split(':');
    const len = segmentFraction(to || '1') - segmentFraction(from || '0');
    instances = len > 0 ? Math.round(1 / len) : 1;
    lane = Math.round(segmentFraction(from || '0') * instances);
  }
  const id = tags.instance_id !== undefined ? String(tags.instance_id) : String(lane);
  return { id, instances, lane, segment, sequence };
}

// hostFacts: the load generator's CPU model, cores and memory, and k6's version, as the one
// who started k6 gathered them into TBS_HOST_FACTS (JSON): the launcher core (k6/ext/launch
// hostfacts.go) for scripts/k6 and compose's k6 services, k8s/render-testrun on Kubernetes;
// a stock `k6 run` has none.
export function hostFacts() {
  try {
    return JSON.parse(__ENV.TBS_HOST_FACTS || '{}');
  } catch (_) {
    return {};
  }
}
