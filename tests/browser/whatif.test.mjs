// The what-if table (issue 16) in headless Chromium: the trace replayed through the
// caching allocator in the worker, one row per configuration, the chosen row's
// predicted reserved curve over the memory timeline and its first OOM marked.
//
// Expected numbers: the recorded peak of reserved bytes from CPython's reference
// (tests/fixtures/expected/corpus.jsonl, tests/reference/summary.py); the other rows
// from `memscope simulate --json` on the same file (the CLI's replay is checked against
// hand-worked traces in crates/allocator/tests/rules.rs and crates/cli/tests/simulate.rs).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { serve, browser, screenshot, dropFiles, fixtures, root } from './harness.mjs';

const NAME = 'fullstep-19k-events-cpp-frames.pickle';
const FILE = join(fixtures, 'corpus', 'real', NAME);

let server;
let reference;

/** `memscope simulate --json ARGS FILE` (the same replay crate the worker runs). */
function simulate(args) {
  const out = execFileSync('cargo', ['run', '--quiet', '-p', 'memscope-cli', '--', 'simulate', '--json', ...args, FILE], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 1 << 26,
  });
  return out.trim().split('\n').map((l) => JSON.parse(l));
}

before(async () => {
  server = await serve();
  const lines = (await readFile(join(fixtures, 'expected', 'corpus.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
  reference = lines.find((l) => l.file === NAME && l.device === 0);
});
after(async () => server.close());

async function open(files) {
  const b = await browser();
  const { page } = b;
  await page.goto(server.url);
  await page.waitForSelector('body[data-status="empty"]');
  await dropFiles(page, files);
  await page.waitForSelector('body[data-status="ready"]', { timeout: 30000 });
  await page.waitForFunction(() => window.memscope.lenses && window.memscope.lenses().moment !== null, null, { timeout: 30000 });
  return b;
}

const rows = (page) => page.$$eval('#whatif-table tr[data-config]', (rs) => rs.map((r) => ({
  config: r.dataset.config,
  peak: Number(r.dataset.peakReservedBytes),
  cached: Number(r.dataset.cachedBytes),
  ooms: Number(r.dataset.ooms),
  pastOom: r.dataset.pastOom === 'true',
})));

test('the what-if table replays the recorded settings exactly and others as the CLI does; a row draws its curve and OOM', async () => {
  const b = await open([FILE]);
  const { page, errors } = b;
  try {
    await page.click('#tab-settings');
    await page.waitForSelector('#whatif-table tr[data-config]', { timeout: 30000 });
    const got = await rows(page);
    const cli = simulate([]);
    assert.deepEqual(got.map((r) => r.config), cli.map((r) => r.config));
    // The recorded settings give back the trace's own peak (CPython's reference).
    assert.equal(got[0].config, 'recorded');
    assert.equal(got[0].peak, reference.peak_reserved_bytes);
    for (const [i, r] of got.entries()) {
      assert.equal(r.peak, cli[i].peak_reserved_bytes, r.config);
      assert.equal(r.cached, cli[i].cached_at_peak_bytes, r.config);
      assert.equal(r.ooms, 0, r.config);
    }
    assert.match(await page.$eval('#whatif-check', (e) => e.textContent), /494 of 494 segment events.*6,770 of 6,770 allocations/);

    // Show the expandable-segments row on the timeline.
    const row = got.findIndex((r) => r.config === 'expandable_segments:True');
    assert.ok(row > 0);
    await page.click(`#whatif-table button[data-whatif-row="${row}"]`);
    await page.waitForSelector('#whatif-layer:not([hidden])');
    assert.equal(await page.$eval('#whatif-layer', (e) => e.dataset.config), 'expandable_segments:True');
    const d = await page.$eval('#whatif-path', (e) => e.getAttribute('d'));
    assert.match(d, /^M/);
    assert.ok(d.split('L').length > 10, d.slice(0, 200));
    await screenshot(page, 'whatif-expandable');

    // With a 40 GiB capacity the recorded settings run out of memory: the first OOM is
    // the CLI's, and it is marked on the timeline.
    await page.fill('#whatif-capacity', '40GiB');
    await page.fill('#whatif-sets', 'expandable_segments:True');
    await page.click('#whatif-run');
    await page.waitForFunction(() => document.querySelector('#whatif-table tr[data-config]')?.dataset.config.includes('capacity'), null, { timeout: 30000 });
    const capped = await rows(page);
    const cliCapped = simulate(['--capacity', '40GiB', '--set', 'expandable_segments:True']);
    assert.deepEqual(
      capped.map((r) => [r.config, r.peak, r.ooms, r.pastOom]),
      cliCapped.map((r) => [r.config, r.peak_reserved_bytes, r.ooms, r.peak_after_first_oom]),
    );
    assert.ok(capped[0].ooms > 0);
    // The check against the trace is the recorded settings without the capacity.
    assert.match(await page.$eval('#whatif-check', (e) => e.textContent), /without a capacity.*494 of 494 segment events/);
    await page.click('#whatif-table button[data-whatif-row="0"]');
    const mark = await page.waitForSelector('#whatif-oom:not([hidden])');
    assert.equal(Number(await mark.getAttribute('data-entry')), cliCapped[0].first_oom.entry);
    assert.match(await mark.getAttribute('title'), /^Predicted OOM \(recorded, capacity 40\.0 GiB\)/);
    await screenshot(page, 'whatif-capacity-oom');

    // A setting that cannot be read is said so.
    await page.fill('#whatif-sets', 'max_split_size_mb:5');
    await page.click('#whatif-run');
    await page.waitForSelector('#whatif-error');
    assert.match(await page.$eval('#whatif-error', (e) => e.textContent), /at least 20 MiB/);
    assert.deepEqual(errors, []);
  } finally {
    await b.close();
  }
});
