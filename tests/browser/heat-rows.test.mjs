// The heatmap of a big job: a report file of 600 ranks (one real record, written by the
// CLI from a corpus file, repeated under 600 rank names in folders of 8 nodes, each
// rank's heatmap row scaled by its own whole factor). Only the rows in sight of the
// heatmap's scroll box (and a margin) may exist, whatever the order; scrolling to the
// end shows the last rank's row; sorting and grouping by node keep working.
//
// The expected orders are computed here from the file written (the factors), never
// read back from the page.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve, browser, dropFiles, root, fixtures } from './harness.mjs';

const RANKS = 600;
const PER_NODE = 8;
// The scroll box shows 24 rows of 20 px; 8 more are drawn either side.
const MAX_DRAWN = 24 + 1 + 2 * 8;

let server;
let work;
let reportPath;
/** Rank i's factor: a permutation of 1..=RANKS, so every row's peak differs. */
const factor = (i) => ((i * 37) % RANKS) + 1;

before(async () => {
  work = await mkdtemp(join(tmpdir(), 'memscope-heat-rows-'));
  const file = join(fixtures, 'corpus', 'real', 'forward-fp32.pickle');
  const r = spawnSync('cargo', ['run', '--release', '-q', '-p', 'memscope-cli', '--', 'report', file], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  if (r.status !== 0) throw new Error(`memscope report: ${r.stderr}`);
  const lines = r.stdout.split('\n').filter((l) => l.trim());
  const head = lines.map((l) => JSON.parse(l)).filter((x) => x.kind !== 'rank');
  const record = lines.map((l) => JSON.parse(l)).find((x) => x.kind === 'rank');
  assert.ok(record, 'the CLI wrote a rank record');
  const out = head.map((h) => JSON.stringify(h));
  for (let i = 0; i < RANKS; i++) {
    const x = structuredClone(record);
    const name = `node${String(Math.floor(i / PER_NODE)).padStart(3, '0')}/rank${i}.pickle`;
    // The id is flattened into the facts and the heatmap row (docs/report-format.md).
    for (const id of [x.report.facts, x.heat]) {
      id.path = name;
      id.file = `rank${i}.pickle`;
      id.rank = i;
    }
    x.heat.values = x.heat.values.map((v) => (v === null ? null : v * factor(i)));
    x.heat.max_bytes *= factor(i);
    out.push(JSON.stringify(x));
  }
  reportPath = join(work, 'big.memscope.jsonl');
  await writeFile(reportPath, out.join('\n') + '\n');
  server = await serve();
});
after(async () => {
  await server?.close();
  await rm(work, { recursive: true, force: true });
});

/** The heatmap's labels now: their rank numbers and whether a node's rows start there. */
function labels(page) {
  return page.$$eval('#heat-labels .heat-label', (ls) =>
    ls.map((l) => ({ rank: Number(l.dataset.rank), row: Number(l.dataset.row), group: l.dataset.group ?? null, name: l.querySelector('.heat-name').firstChild.textContent })),
  );
}

/** Scrolls the heatmap's box to `top` (px; Infinity for the end) and waits for a frame. */
async function scrollTo(page, top) {
  await page.$eval('#heat-scroll', (s, t) => {
    s.scrollTop = t === null ? s.scrollHeight : t;
  }, Number.isFinite(top) ? top : null);
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r()))));
}

/** The canvas's CSS height and the labels' count are bounded, whatever the scroll. */
async function assertBounded(page) {
  const drawn = await page.$$eval('#heat-labels .heat-label', (ls) => ls.length);
  assert.ok(drawn > 0 && drawn <= MAX_DRAWN, `${drawn} rows drawn`);
  const canvas = await page.$eval('#heat-canvas', (c) => ({ css: c.getBoundingClientRect().height, px: c.height }));
  assert.ok(canvas.css <= MAX_DRAWN * 20, `canvas ${canvas.css} px tall`);
  assert.equal(await page.getAttribute('#heat-labels', 'data-rows'), String(RANKS));
}

test('600 report-only ranks: bounded rows while scrolling, sorting and grouping; the end shows the last rank', async () => {
  const b = await browser();
  try {
    const { page } = b;
    await page.goto(server.url);
    await page.waitForSelector('body[data-status="empty"]');
    await dropFiles(page, [reportPath]);
    await page.waitForSelector('#fleet[data-status="ready"]', { timeout: 60000 });
    await page.waitForSelector(`#heat-labels[data-rows="${RANKS}"]`, { timeout: 30000 });
    await page.locator('#heat-scroll').scrollIntoViewIfNeeded();

    // The rows, their time axis and the phase lanes below (on the same clock) line up,
    // whether or not the box's scrollbar takes room.
    const edges = await page.evaluate(() =>
      ['heat-canvas', 'heat-axis', 'lanes-canvas'].map((id) => {
        const r = document.getElementById(id).getBoundingClientRect();
        return [Math.round(r.left), Math.round(r.right)];
      }),
    );
    assert.deepEqual(edges[1], edges[0], `axis ${edges[1]} under rows ${edges[0]}`);
    assert.deepEqual(edges[2], edges[0], `lanes ${edges[2]} under rows ${edges[0]}`);

    // Rank order: the first rows are ranks 0, 1, 2…; the whole job scrolls.
    let shown = await labels(page);
    assert.deepEqual(shown.slice(0, 5).map((l) => l.rank), [0, 1, 2, 3, 4]);
    await assertBounded(page);
    const box = await page.$eval('#heat-scroll', (s) => ({ client: s.clientHeight, scroll: s.scrollHeight }));
    assert.equal(box.scroll, RANKS * 20);
    assert.ok(box.client <= 480, `the box is ${box.client} px tall`);

    // The end: the last rank's row, labelled as the last rank, in sight.
    await scrollTo(page, Infinity);
    await assertBounded(page);
    shown = await labels(page);
    const last = shown[shown.length - 1];
    assert.equal(last.rank, RANKS - 1);
    assert.equal(last.row, RANKS - 1);
    assert.match(last.name, new RegExp(`\\b${RANKS - 1}\\b`));
    const inSight = await page.$eval(`#heat-labels .heat-label[data-row="${RANKS - 1}"]`, (l) => {
      const r = l.getBoundingClientRect();
      const s = document.getElementById('heat-scroll').getBoundingClientRect();
      return r.top >= s.top - 0.5 && r.bottom <= s.bottom + 0.5 && r.height > 0;
    });
    assert.ok(inSight, 'the last row is in sight of the box');

    // The middle: the rows drawn are those around the scroll position.
    await scrollTo(page, 300 * 20);
    await assertBounded(page);
    shown = await labels(page);
    assert.ok(shown.some((l) => l.row === 300) && shown.every((l) => Math.abs(l.row - 300) <= MAX_DRAWN), `rows ${shown[0].row}…${shown.at(-1).row}`);
    // The canvas sits where its rows are: its top at row 300's label (± a row).
    const offset = await page.$eval('#heat-canvas', (c) => {
      const first = document.querySelector('#heat-labels .heat-label').getBoundingClientRect().top;
      return c.getBoundingClientRect().top - first;
    });
    assert.ok(Math.abs(offset) < 1, `canvas ${offset} px off its labels`);
    // The readout over a cell names the row drawn there (the canvas holds the drawn
    // rows only): checked at the middle of rows in sight.
    const cx = await page.$eval('#heat-canvas', (c) => {
      const r = c.getBoundingClientRect();
      return r.left + r.width / 2;
    });
    const sight = await page.$$eval('#heat-labels .heat-label', (ls) => {
      const box = document.getElementById('heat-scroll').getBoundingClientRect();
      return ls
        .map((l) => ({ r: l.getBoundingClientRect(), name: l.querySelector('.heat-name').firstChild.textContent }))
        .filter(({ r }) => r.top >= box.top && r.bottom <= box.bottom)
        .map(({ r, name }) => ({ y: r.top + r.height / 2, name }));
    });
    assert.ok(sight.length >= 10, `${sight.length} rows in sight`);
    for (const l of [sight[0], sight[Math.floor(sight.length / 2)], sight[sight.length - 1]]) {
      await page.mouse.move(cx, l.y);
      assert.equal((await page.textContent('#heat-hover')).split('\n')[0], l.name);
    }

    // Sorted by peak: the largest factor first; at the end, the smallest.
    const byPeak = [...Array(RANKS).keys()].sort((a, b) => factor(b) - factor(a));
    await page.selectOption('#heat-sort', 'peak');
    await scrollTo(page, 0);
    shown = await labels(page);
    assert.deepEqual(shown.slice(0, 5).map((l) => l.rank), byPeak.slice(0, 5));
    await scrollTo(page, Infinity);
    await assertBounded(page);
    shown = await labels(page);
    assert.deepEqual(shown.slice(-3).map((l) => l.rank), byPeak.slice(-3));

    // Grouped by node (then by peak within a node): at the end, the last node's rows,
    // its largest factor first; every drawn group start names its node.
    await page.check('#heat-group');
    await scrollTo(page, Infinity);
    await assertBounded(page);
    shown = await labels(page);
    const lastNode = Math.floor((RANKS - 1) / PER_NODE);
    const lastNodeRanks = [...Array(PER_NODE).keys()].map((k) => lastNode * PER_NODE + k).sort((a, b) => factor(b) - factor(a));
    assert.deepEqual(shown.slice(-PER_NODE).map((l) => l.rank), lastNodeRanks);
    const starts = shown.filter((l) => l.group !== null);
    assert.ok(starts.length >= 2, `${starts.length} group starts drawn`);
    for (const s of starts) {
      assert.equal(s.group, `node${String(Math.floor(s.rank / PER_NODE)).padStart(3, '0')}`);
    }
    assert.equal(shown[shown.length - PER_NODE].group, `node${String(lastNode).padStart(3, '0')}`);
  } finally {
    await b.close();
  }
});
