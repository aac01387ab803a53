// The viewer in headless Chromium: loading, the timeline, inspecting, bad files, the
// example. Expected numbers come from tests/fixtures/expected/corpus.jsonl, which
// CPython's pickle produced (tests/reference/summary.py), never from memscope.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { serve, browser, screenshot, dropFiles, reference, paintedPixels, fixtures, locate } from './harness.mjs';

const real = (name) => join(fixtures, 'corpus', 'real', name);
const bad = (name) => join(fixtures, 'corpus', 'bad', name);

let server;
let ref;
before(async () => {
  server = await serve();
  ref = await reference();
});
after(async () => server.close());

/** Waits for a (file, device) to load and returns its data attributes. */
async function loaded(page, file, device = 0) {
  const sel = `.device[data-file="${file}"][data-device="${device}"][data-peak-allocated-bytes]`;
  await page.waitForSelector(sel, { timeout: 30000 });
  return page.$eval(sel, (e) => ({ ...e.dataset }));
}

test('dropping two ranks lists both with the reference peaks and draws the timeline', async () => {
  const b = await browser();
  try {
    const { page, errors } = b;
    await page.goto(server.url);
    await page.waitForSelector('body[data-status="empty"]');
    await dropFiles(page, [real('forward-fp32.pickle'), real('external-annotations.pickle')]);
    for (const file of ['forward-fp32.pickle', 'external-annotations.pickle']) {
      const got = await loaded(page, file);
      const want = ref.get(`${file}#0`);
      assert.equal(Number(got.peakAllocatedBytes), want.peak_allocated_bytes, file);
      assert.equal(Number(got.peakReservedBytes), want.peak_reserved_bytes, file);
      assert.equal(Number(got.events), want.events, file);
      assert.equal(got.rank, '', `${file} has no rank number`);
    }
    await page.waitForSelector('body[data-status="ready"]');
    const { painted, total } = await paintedPixels(page);
    assert.ok(painted > total * 0.05, `only ${painted} of ${total} pixels painted`);
    // The legend names call sites with their bytes.
    const legend = await page.$$eval('#legend .legend-item', (items) => items.length);
    assert.ok(legend >= 3, `legend has ${legend} entries`);
    await screenshot(page, 'viewer-two-ranks');
    assert.deepEqual(errors, []);
  } finally {
    await b.close();
  }
});

test('ranks are ordered by the number in their names, from the file picker', async () => {
  const b = await browser();
  try {
    const { page } = b;
    await page.goto(server.url);
    await page.waitForSelector('body[data-status="empty"]');
    // Copies under rank names (the picker takes buffers with names).
    const bytes = await import('node:fs/promises').then((fs) => fs.readFile(real('forward-fp32.pickle')));
    const input = await page.$('input[type=file][multiple]:not([webkitdirectory])');
    await input.setInputFiles([
      { name: 'rank10.pickle', mimeType: 'application/octet-stream', buffer: bytes },
      { name: 'rank2.pickle', mimeType: 'application/octet-stream', buffer: bytes },
      { name: 'notes.pickle', mimeType: 'application/octet-stream', buffer: bytes },
    ]);
    for (const f of ['rank10.pickle', 'rank2.pickle', 'notes.pickle']) await loaded(page, f);
    const order = await page.$$eval('.rank-card', (cards) => cards.map((c) => c.dataset.file));
    assert.deepEqual(order, ['rank2.pickle', 'rank10.pickle', 'notes.pickle']);
    const ranks = await page.$$eval('.device', (rows) => rows.map((r) => r.dataset.rank));
    assert.deepEqual(ranks, ['2', '10', '']);
  } finally {
    await b.close();
  }
});

test('clicking a known allocation shows its stack in the detail panel', async () => {
  const b = await browser();
  try {
    const { page } = b;
    await page.goto(server.url);
    await dropFiles(page, [real('forward-fp32.pickle')]);
    await loaded(page, 'forward-fp32.pickle');
    await page.waitForSelector('body[data-status="ready"]');
    // The largest allocation of forward-fp32 is its 681st alloc (id 680), 20,480,000
    // bytes, allocated by forward at linear.py:15 (CPython: pickle.load of the file).
    const at = await locate(page, 680);
    assert.ok(at, 'allocation 680 is drawn');
    await page.mouse.move(at.x, at.y);
    await page.mouse.down();
    await page.mouse.up();
    await page.waitForSelector('#detail-body[data-allocation="680"] .stack');
    const text = await page.$eval('#detail-body', (e) => e.innerText);
    assert.match(text, /Allocation #680/);
    assert.match(text, /19\.5 MiB \(20,480,000 bytes\)/);
    assert.match(text, /linear\.py:15/);
    // The call site is the innermost frame of the user's own code.
    const site = await page.$eval('.frame.call-site', (e) => e.innerText);
    assert.match(site, /forward/);
    // Interpreter and unwinder frames are hidden until asked for.
    const hidden = await page.$$eval('.frame.noise', (f) => f.length);
    assert.equal(hidden, 0);
    await page.click('#noise-toggle');
    const shown = await page.$$eval('.frame.noise', (f) => f.length);
    assert.ok(shown > 0);
    assert.match(await page.$eval('#detail-body', (e) => e.innerText), /_PyEval_EvalFrameDefault/);
    await screenshot(page, 'viewer-detail');
  } finally {
    await b.close();
  }
});

test('a bad file gets an error card naming it; the other rank still draws', async () => {
  const b = await browser();
  try {
    const { page } = b;
    await page.goto(server.url);
    await dropFiles(page, [bad('numpy-globals.pickle'), real('forward-fp32.pickle')]);
    const sel = '[data-file="numpy-globals.pickle"][data-error]';
    await page.waitForSelector(sel);
    const message = await page.$eval(sel, (e) => e.innerText);
    assert.match(message, /numpy-globals\.pickle/);
    assert.match(message, /GLOBAL/);
    await loaded(page, 'forward-fp32.pickle');
    await page.waitForSelector('body[data-status="ready"]');
    const { painted } = await paintedPixels(page);
    assert.ok(painted > 1000);
    await screenshot(page, 'viewer-bad-file');
  } finally {
    await b.close();
  }
});

test('the example opens from the button and at #example', async () => {
  const b = await browser();
  try {
    const { page } = b;
    await page.goto(server.url);
    await page.click('#example');
    await loaded(page, 'forward-fp32.pickle');
    await page.waitForSelector('body[data-status="ready"]');
    await page.goto(server.url + '#example');
    await page.reload();
    const got = await loaded(page, 'forward-fp32.pickle');
    assert.equal(Number(got.peakAllocatedBytes), ref.get('forward-fp32.pickle#0').peak_allocated_bytes);
    await page.waitForSelector('body[data-status="ready"]');
    await screenshot(page, 'viewer-example');
  } finally {
    await b.close();
  }
});
