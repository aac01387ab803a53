// A fleet report file (`memscope report FILES > job.memscope.jsonl`) opened in the page:
// the Fleet view from the records alone, no snapshot read; opening a rank asks for that
// rank's snapshot by name, and once picked its timeline shows.
//
// The report is written by the CLI from real corpus files; every peak the page shows is
// checked against CPython reading the same pickles (tests/fixtures/expected/corpus.jsonl),
// never against the page itself.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, writeFile, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve, browser, dropFiles, reference, root, fixtures } from './harness.mjs';

// Two with a clock, one without (the shared heatmap axis becomes entry order); one
// device with something to show each.
const FILES = ['external-annotations.pickle', 'forward-fp32.pickle', 'four-devices-no-time-us.pickle'];
const paths = FILES.map((f) => join(fixtures, 'corpus', 'real', f));

let server;
let work;
let reportPath;
/** CPython's peak allocated bytes by `file#device`, for FILES. */
const expected = new Map();

before(async () => {
  work = await mkdtemp(join(tmpdir(), 'memscope-report-file-'));
  const r = spawnSync('cargo', ['run', '--release', '-q', '-p', 'memscope-cli', '--', 'report', ...paths], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  if (r.status !== 0) throw new Error(`memscope report: ${r.stderr}`);
  reportPath = join(work, 'job.memscope.jsonl');
  await writeFile(reportPath, r.stdout);
  for (const [key, o] of await reference()) {
    if (FILES.includes(o.file) && o.peak_allocated_bytes !== undefined) {
      expected.set(key, o.peak_allocated_bytes);
    }
  }
  assert.equal(expected.size, FILES.length, `reference rows: ${[...expected.keys()]}`);
  server = await serve();
});
after(async () => {
  await server?.close();
  await rm(work, { recursive: true, force: true });
});

/** The overview's rows: `file#device` → peak allocated bytes. */
async function overviewPeaks(page) {
  const rows = await page.$$eval('#fleet-overview tr[data-action="focus-rank"]', (trs) =>
    trs.map((tr) => [`${tr.dataset.file}#${tr.dataset.device}`, Number(tr.dataset.peakAllocatedBytes)]),
  );
  return new Map(rows);
}

test('a dropped report file shows the fleet without reading a snapshot', async () => {
  const b = await browser();
  try {
    const { page } = b;
    await page.goto(server.url);
    await page.waitForSelector('body[data-status="empty"]');
    await dropFiles(page, [reportPath]);
    await page.waitForSelector('#fleet[data-status="ready"]', { timeout: 60000 });
    await page.waitForSelector('.view[data-view="fleet"]');
    assert.deepEqual(await overviewPeaks(page), expected);
    // No rank was loaded, no worker read a file: the ranks' list names the report's
    // ranks, each with its peak from the record.
    assert.equal(await page.locator('.rank-card:not(.filed)').count(), 0);
    const listed = await page.$$eval('#filed-ranks .rank-card.filed', (cards) =>
      cards.map((c) => [`${c.dataset.file}#${c.querySelector('.filed-device').dataset.device}`, c.textContent]),
    );
    assert.deepEqual(listed.map(([k]) => k).sort(), [...expected.keys()].sort());
    for (const [, text] of listed) assert.match(text, /from job\.memscope\.jsonl: click to open its snapshot/);
    // Every row is in the heatmap, from the records, and the note says so.
    await page.waitForFunction(
      (n) => document.querySelectorAll('#heat-labels .heat-label').length === n,
      expected.size,
      { timeout: 30000 },
    );
    const note = await page.textContent('#heat-note');
    assert.match(note, /from the report file/);
    assert.match(await page.textContent('#fleet-filed'), new RegExp(`job\\.memscope\\.jsonl: ${expected.size} ranks`));
  } finally {
    await b.close();
  }
});

test('#url= opens a report file; opening a rank asks for its snapshot by name and shows it', async () => {
  const b = await browser();
  try {
    const { page } = b;
    const body = await readFile(reportPath, 'utf8');
    const url = `${server.url}reports/job.memscope.jsonl`;
    await page.route(url, (route) => route.fulfill({ status: 200, contentType: 'application/jsonl', body }));
    await page.goto(`${server.url}#url=${encodeURIComponent(url)}`);
    await page.waitForSelector('#fleet[data-status="ready"]', { timeout: 60000 });
    assert.deepEqual(await overviewPeaks(page), expected);

    // A rank listed on the left asks for its snapshot, in the Fleet view: clicked, or
    // Enter on its row.
    await page.click('#view-rank');
    await page.click('#filed-ranks .rank-card[data-file="external-annotations.pickle"] .filed-device');
    await page.waitForSelector('.view[data-view="fleet"]');
    await page.waitForSelector('#fleet-ask[data-file="external-annotations.pickle"]:not([hidden])');
    await page.click('#view-rank');
    await page.focus('#filed-ranks .rank-card[data-file="four-devices-no-time-us.pickle"] .filed-device');
    await page.keyboard.press('Enter');
    await page.waitForSelector('.view[data-view="fleet"]');
    await page.waitForSelector('#fleet-ask[data-file="four-devices-no-time-us.pickle"]:not([hidden])');

    // Open the rank of forward-fp32.pickle from the overview: the page asks for it.
    await page.click('#fleet-overview tr[data-file="forward-fp32.pickle"]');
    await page.waitForSelector('#fleet-ask[data-file="forward-fp32.pickle"]:not([hidden])');
    assert.equal(await page.getAttribute('#fleet-ask', 'data-file'), 'forward-fp32.pickle');
    assert.match(await page.textContent('#fleet-ask'), /forward-fp32\.pickle/);

    await page.setInputFiles('#fleet-ask-file', paths[1]);
    // Loaded, reported, and shown on the Rank view.
    await page.waitForSelector('.view[data-view="rank"]', { timeout: 60000 });
    await page.waitForFunction(() => (document.body.dataset.device || '').endsWith(':0'), null, {
      timeout: 60000,
    });
    const peak = await page.getAttribute('.device[data-peak-allocated-bytes]', 'data-peak-allocated-bytes');
    assert.equal(Number(peak), expected.get('forward-fp32.pickle#0'));
    // The loaded rank takes the filed one's place in the list and in the fleet.
    await page.waitForFunction(() => !document.querySelector('#filed-ranks .rank-card[data-file="forward-fp32.pickle"]'));
    assert.equal(await page.locator('#filed-ranks .rank-card.filed').count(), expected.size - 1);
    await page.click('#view-fleet');
    await page.waitForSelector('#fleet[data-status="ready"]', { timeout: 60000 });
    assert.deepEqual(await overviewPeaks(page), expected);
  } finally {
    await b.close();
  }
});
