// One source for every measured figure a reader sees: each table of figures in the pages is a
// block between `<!-- figures:NAME -->` and `<!-- /figures:NAME -->`, rendered from the results
// files the bench wrote (bench/results.json for MariaDB; a file per further server, e.g.
// bench/results-mysql.json, sits beside it and renders beside it, each figure naming its server,
// date and host). `npm run bench` rewrites the blocks after writing its results;
// __test__/package/readme.test.mjs fails when a page shows anything else.
//
//   node bench/figures.mjs            # rewrite every block of every page from the results files
//   node bench/figures.mjs --check    # exit 1 if a block differs (what the test checks)
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { renderPushBinlog, renderPushIdle, renderPushLatency } from './push-figures.mjs';
import { renderHeadline, renderSingleCalls, renderSummary, serverOf } from './summary.mjs';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The results files, one per server, in the order their figures appear; a missing one is skipped. */
export const SOURCES = ['bench/results.json', 'bench/results-mysql.json'];

/** The pages that hold figure blocks. */
export const PAGES = ['README.md', 'docs/benchmarks.md', 'docs/push.md'];

/**
 * The blocks: `render(results, { base, file })` → Markdown for one results file; `sections` says
 * whether each file's figures get a heading line naming the server (tables do; the headline's
 * bullets name it themselves). `needs(results)`: whether the file has figures for this block.
 */
export const BLOCKS = {
  headline: { render: renderHeadline, needs: () => true },
  'bench-summary': { render: renderSummary, sections: true, needs: (r) => r.flows?.length || r.scenarios?.length },
  'single-calls': {
    render: renderSingleCalls,
    sections: true,
    needs: (r) => r.scenarios?.some((s) => s.kind === 'micro'),
  },
  'push-latency': { render: renderPushLatency, sections: true, needs: (r) => r.push?.variants?.length },
  'push-idle': { render: renderPushIdle, sections: true, needs: (r) => r.push?.idle?.rows?.length },
  // A results file of its own (`source`), not one per server.
  'push-binlog': { render: renderPushBinlog, source: 'bench/push-binlog.json', needs: (r) => r.variants?.length },
};

const OPEN = /<!-- figures:([a-z-]+) -->\n/g;
const close = (name) => `<!-- /figures:${name} -->`;

/** The results files present under `root`: `[{ file, results }]` (and `root`, for a block's own file). */
export function loadSources(root = ROOT) {
  const sources = SOURCES.filter((f) => existsSync(join(root, f))).map((file) => ({
    file,
    results: JSON.parse(readFileSync(join(root, file), 'utf8')),
  }));
  return Object.assign(sources, { root });
}

/** One results file of a block's own, as sources (none when it is missing). */
function loadFile(file, root = ROOT) {
  const path = join(root, file);
  return existsSync(path) ? [{ file, results: JSON.parse(readFileSync(path, 'utf8')) }] : [];
}

/** Block `name` for `page` (its links relative to the page) from `sources`. */
export function renderBlock(name, sources, page) {
  const block = BLOCKS[name];
  if (!block) throw new Error(`${page}: unknown figures block ${JSON.stringify(name)}`);
  const base = posix.relative(posix.dirname(page), '.');
  const prefix = base ? `${base}/` : '';
  if (block.source) sources = loadFile(block.source, sources.root);
  const parts = sources
    .filter((s) => block.needs(s.results))
    .map(({ file, results }) => {
      const body = block.render(results, { base: prefix, file });
      return block.sections ? `**${serverOf(results)}**\n\n${body}` : body;
    });
  return parts.length ? parts.join('\n\n') : '(no results file has these figures yet)';
}

/** The blocks of `text`: `[{ name, body, start, end }]` (`start`/`end`: the body's offsets). */
export function blocksOf(text, page = 'the page') {
  const out = [];
  for (const m of text.matchAll(OPEN)) {
    const start = m.index + m[0].length;
    const end = text.indexOf(close(m[1]), start);
    if (end < 0) throw new Error(`${page}: ${m[0].trim()} has no ${close(m[1])}`);
    out.push({ name: m[1], body: text.slice(start, end).replace(/\n$/, ''), start, end });
  }
  return out;
}

/** `text` with every block rendered afresh from `sources`. */
export function renderPage(text, sources, page) {
  let out = '';
  let at = 0;
  for (const b of blocksOf(text, page)) {
    out += `${text.slice(at, b.start)}${renderBlock(b.name, sources, page)}\n`;
    at = b.end;
  }
  return out + text.slice(at);
}

/** Rewrites every page's blocks from the results files; answers the pages that changed. */
export function writeFigures(root = ROOT) {
  const sources = loadSources(root);
  const changed = [];
  for (const page of PAGES) {
    const path = join(root, page);
    const text = readFileSync(path, 'utf8');
    const next = renderPage(text, sources, page);
    if (next !== text) {
      writeFileSync(path, next);
      changed.push(page);
    }
  }
  return changed;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.argv.includes('--check')) {
    const sources = loadSources();
    const stale = PAGES.filter(
      (p) => renderPage(readFileSync(join(ROOT, p), 'utf8'), sources, p) !== readFileSync(join(ROOT, p), 'utf8'),
    );
    if (stale.length) {
      console.error(`figures out of date in ${stale.join(', ')}: run node bench/figures.mjs`);
      process.exitCode = 1;
    }
  } else {
    const changed = writeFigures();
    console.log(changed.length ? `figures rewritten in ${changed.join(', ')}` : 'figures up to date');
  }
}
