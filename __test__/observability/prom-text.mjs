// A strict reader of the Prometheus text exposition format (0.0.4), for the tests: every line is a
// `# HELP`, a `# TYPE` or a sample of the family declared before it (a histogram's samples end in
// `_bucket`, `_sum` or `_count`, its buckets carry `le`), label values are quoted and escaped, no
// series appears twice. Throws on anything else. Not a test file itself.

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const LABEL = `([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\\\\n]|\\\\[\\\\"n])*)"`;
const SAMPLE = new RegExp(`^(${NAME})(?:\\{((?:${LABEL})(?:,${LABEL})*)?\\})? (\\S+)$`);

/** `text` → Map<family name, { type, help, samples: [{ name, labels, value }] }>. */
export function parsePrometheus(text) {
  if (!text.endsWith('\n')) throw new Error('the text must end with a newline');
  const families = new Map();
  const series = new Set();
  let current;
  for (const [i, line] of text.slice(0, -1).split('\n').entries()) {
    const where = `line ${i + 1}: ${line}`;
    if (line === '') continue;
    let m = /^# HELP (\S+) (.*)$/.exec(line);
    if (m) {
      if (families.has(m[1])) throw new Error(`${where}: family declared twice`);
      current = { name: m[1], help: m[2], type: undefined, samples: [] };
      families.set(m[1], current);
      continue;
    }
    m = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (m) {
      if (!current || current.name !== m[1] || current.type) throw new Error(`${where}: TYPE without its HELP`);
      current.type = m[2];
      continue;
    }
    m = SAMPLE.exec(line);
    if (!m || !current) throw new Error(`${where}: not a sample`);
    const [, name, labelText = '', , , , , raw] = m;
    const suffixes = current.type === 'histogram' ? ['_bucket', '_sum', '_count'] : [''];
    if (!suffixes.some((s) => name === `${current.name}${s}`))
      throw new Error(`${where}: not of family ${current.name}`);
    const labels = {};
    for (const [, k, v] of labelText.matchAll(new RegExp(LABEL, 'g'))) {
      if (k in labels) throw new Error(`${where}: label ${k} twice`);
      labels[k] = v.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    }
    if (name.endsWith('_bucket') && labels.le === undefined) throw new Error(`${where}: a bucket without le`);
    const value = raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : Number(raw);
    if (Number.isNaN(value) && raw !== 'NaN') throw new Error(`${where}: value ${raw}`);
    const key = `${name}${JSON.stringify(Object.entries(labels).sort())}`;
    if (series.has(key)) throw new Error(`${where}: series repeated`);
    series.add(key);
    current.samples.push({ name, labels, value });
  }
  return families;
}
