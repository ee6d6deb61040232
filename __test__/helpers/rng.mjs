// A small deterministic PRNG (mulberry32) for the randomised tests: the same seed replays the
// same trials, so a failure printed with its seed can be run again exactly.

/** A function returning uniformly distributed numbers in [0, 1), determined by `seed`. */
export function rngOf(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}
