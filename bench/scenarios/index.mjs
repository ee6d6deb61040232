// The scenarios, in the order of the report: micro-ops, engine-shaped drains, the engine's bulk
// submission and timer drain, engine-driven flows, push latency across processes, and (only when
// named: --only scale) the cost of the calls about live work as the finished history grows.
//
// A scenario is `{ name, kind, unit, conc, size, setup, run, verify?, teardown?, digests?,
// chartLabel? }`. setup(impl, size) runs untimed and returns a context; run(impl, ctx) is timed and
// returns the number of operations it did (runs, for drains) - execute.mjs measures it. A scenario
// with its own `measure(sc)` (push: latency percentiles, not a rate) is measured by that instead.
import { drainScenarios } from './drains.mjs';
import { engineScenarios } from './engine.mjs';
import { flowScenarios } from './flows.mjs';
import { microScenarios } from './micro.mjs';
import { pushScenarios } from './push.mjs';
import { scaleScenarios } from './scale.mjs';

export const allScenarios = () => [
  ...microScenarios(),
  ...drainScenarios(),
  ...engineScenarios(),
  ...flowScenarios(),
  ...pushScenarios(),
  ...scaleScenarios(),
];
