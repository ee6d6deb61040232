// The scale scenario inside the main bench (`npm run bench -- --only scale`): bench/scale/ on the
// bench's own server, with BENCH_SCALE_SIZES (default 10000,100000,1000000) runs and
// BENCH_SCALE_REPS (default 9) repetitions; its tables print after the others. Not part of a full
// run unless asked for by name (it takes minutes per server): `bench/scale.mjs` runs it on MariaDB
// and MySQL at once.
import { bench } from '../context.mjs';
import { failures } from '../execute.mjs';
import { measureScale } from '../scale/measure.mjs';

const sizes = () => (process.env.BENCH_SCALE_SIZES ?? '10000,100000,1000000').split(',').map(Number);

async function measure(sc) {
  const res = { name: sc.name, kind: 'scale', unit: 'ms', size: sc.size, conc: 1, summary: {}, errors: {} };
  try {
    res.scale = await measureScale({
      url: bench.serverUrl,
      sizes: sizes(),
      reps: Number(process.env.BENCH_SCALE_REPS ?? 9),
      serverPid: bench.server?.pid,
      log: (line) => console.error(line),
    });
  } catch (e) {
    res.errors.scale = e.message;
    failures.push({ scenario: sc.name, impl: 'scale', error: e });
    console.error(`  ${sc.name} FAILED: ${e.message}`);
  }
  return res;
}

export function scaleScenarios() {
  return [{ name: 'scale', kind: 'scale', unit: 'ms', conc: 1, size: Math.max(...sizes()), measure, onlyByName: true }];
}
