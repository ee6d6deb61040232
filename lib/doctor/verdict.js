'use strict';
// One check line (`{ name, verdict, detail, value? }`) and how verdicts combine: the worst wins.
const RANK = { ok: 0, warn: 1, fail: 2 };

function check(name, verdict, detail, value) {
  const out = { name, verdict, detail };
  if (value !== undefined) out.value = value;
  return out;
}

const worst = (verdicts) => verdicts.reduce((a, b) => (RANK[b] > RANK[a] ? b : a), 'ok');

module.exports = { check, worst };
