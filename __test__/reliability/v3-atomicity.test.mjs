// Reliability — every unit of work only the 3.0 contract has is all-or-nothing when its
// connection is lost, as atomicity.test.mjs shows for the 2.0.0-alpha.2 units (same proxy, same
// four faults, same checks; the machinery is in faults.mjs, the units in v3-units.mjs):
// enqueueMany (two statements), deleteRuns / cancelRuns / retryRuns by filter, a checkpointStep
// and a suspendRun with requireVersion, an upsertCron changing the schedule, claim with names,
// and inTx with four units and two own writes — natively and over a wrapped Sql — hit at each
// of its packets.
//
// V3_ATOMICITY_TRIALS (default 100, as for the alpha.2 units) sets the trials per reset kind and
// unit, V3_ATOMICITY_SEED the seed (printed, to replay a failure).
import { attackUnit, useFaultProxy } from './faults.mjs';
import { units, v3 } from './v3-units.mjs';

const TRIALS = Number(process.env.V3_ATOMICITY_TRIALS) || 100;
const DELAY_TRIALS = Math.min(10, Math.max(4, Math.ceil(TRIALS / 5)));
const SEED = Number(process.env.V3_ATOMICITY_SEED) || 0x3a70;

const holder = useFaultProxy();
const envOpts = { schema: v3.applySchema, backend: v3.createMysqlBackend };

for (const unit of units) {
  attackUnit(holder, unit, { trials: TRIALS, delayTrials: DELAY_TRIALS, seed: SEED, tag: 'v3-atomicity', envOpts });
}
