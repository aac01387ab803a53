// Models kept under a memory budget: with `?model-budget-mib=0` the workers keep only
// the rank shown, every other rank keeps its record (the Fleet view stays whole) and is
// read again from its File handle when opened.
//
// Every peak is checked against CPython reading the same pickles
// (tests/fixtures/expected/corpus.jsonl), never against the page itself.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { serve, browser, dropFiles, reference, fixtures } from './harness.mjs';

const FILES = ['external-annotations.pickle', 'forward-fp32.pickle', 'four-devices-no-time-us.pickle'];
const paths = FILES.map((f) => join(fixtures, 'corpus', 'real', f));

let server;
const expected = new Map();

before(async () => {
  for (const [key, o] of await reference()) {
    if (FILES.includes(o.file) && o.peak_allocated_bytes !== undefined) expected.set(o.file, o.peak_allocated_bytes);
  }
  assert.equal(expected.size, FILES.length);
  server = await serve();
});
after(async () => {
  await server?.close();
});

test('a rank whose model was dropped is read again when opened, with the same peaks', async () => {
  const b = await browser();
  try {
    const { page } = b;
    await page.goto(`${server.url}?model-budget-mib=0`);
    await page.waitForSelector('body[data-status="empty"]');
    await dropFiles(page, paths);
    await page.waitForFunction(
      (n) => document.querySelectorAll('#ranks .device[data-peak-allocated-bytes]').length === n,
      FILES.length,
      { timeout: 60000 },
    );
    // Every rank reports; all but the one shown are dropped.
    await page.click('#view-fleet');
    await page.waitForSelector('#fleet[data-status="ready"]', { timeout: 60000 });
    await page.waitForFunction(
      (n) => document.querySelectorAll('.rank-card[data-held="false"]').length === n,
      FILES.length - 1,
      { timeout: 30000 },
    );
    const shownKey = await page.evaluate(() => document.body.dataset.device.split(':')[0]);
    assert.equal(await page.getAttribute(`.rank-card[data-key="${shownKey}"]`, 'data-held'), 'true');
    // The fleet keeps every rank's row from the records.
    const rows = await page.$$eval('#fleet-overview tr.rank-row', (trs) =>
      trs.map((t) => [t.dataset.file, Number(t.dataset.peakAllocatedBytes)]),
    );
    assert.deepEqual(new Map(rows), expected);

    // Open each dropped rank from the rank list: read again, shown, same peak.
    const dropped = await page.$$eval('.rank-card[data-held="false"]', (c) => c.map((x) => x.dataset.key));
    await page.click('#view-rank');
    for (const key of dropped) {
      await page.click(`.rank-card[data-key="${key}"] .device`);
      await page.waitForFunction(
        (k) =>
          document.body.dataset.device === `${k}:0` &&
          document.querySelector(`.rank-card[data-key="${k}"]`)?.dataset.held === 'true',
        key,
        { timeout: 60000 },
      );
      const file = await page.getAttribute(`.rank-card[data-key="${key}"]`, 'data-file');
      const peak = Number(
        await page.getAttribute(`.rank-card[data-key="${key}"] .device`, 'data-peak-allocated-bytes'),
      );
      assert.equal(peak, expected.get(file), file);
      // Its timeline is drawn again from the model read: the y axis reaches the peak.
      await page.waitForFunction(
        (p) => Number(document.getElementById('plot')?.dataset.yMaxBytes || 0) >= p,
        peak,
        { timeout: 30000 },
      );
      // The rank shown before it is dropped in turn (the budget keeps one).
      await page.waitForFunction(
        (n) => document.querySelectorAll('.rank-card[data-held="false"]').length === n,
        FILES.length - 1,
        { timeout: 30000 },
      );
    }
    // The fleet is unchanged.
    await page.click('#view-fleet');
    await page.waitForSelector('#fleet[data-status="ready"]', { timeout: 60000 });
    const after = await page.$$eval('#fleet-overview tr.rank-row', (trs) =>
      trs.map((t) => [t.dataset.file, Number(t.dataset.peakAllocatedBytes)]),
    );
    assert.deepEqual(new Map(after), expected);
  } finally {
    await b.close();
  }
});
