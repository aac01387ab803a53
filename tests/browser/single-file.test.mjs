// The single HTML file (`memscope html`, built on dist/single.html) opened from file://
// in headless Chromium with the network off and every request that is not the file's
// own (file:, blob:, data:) refused: the ranks load from inside the file through the
// workers, the embedded view is restored (device, axis, visible range), the embedded
// anomalies are listed, the page's interactions work, and nothing asks the network.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { browser, screenshot, reference, fixtures, root, dist, locate } from './harness.mjs';

const real = (name) => join(fixtures, 'corpus', 'real', name);

/** Runs the CLI (built by cargo: the native tests have built it already in CI). */
function memscope(args) {
  return execFileSync('cargo', ['run', '--quiet', '--locked', '-p', 'memscope-cli', '--', ...args], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Opens `file` from disk with no network; resolves to the browser and the refused requests. */
async function openOffline(file) {
  const b = await browser();
  const refused = [];
  await b.context.route('**/*', (route) => {
    const url = route.request().url();
    if (/^(file|blob|data):/.test(url)) return route.continue();
    refused.push(url);
    return route.abort();
  });
  await b.context.setOffline(true);
  await b.page.goto('file://' + file);
  return { ...b, refused };
}

const plot = (page) => page.$eval('#plot', (e) => ({ ...e.dataset }));

test('a written file opens from file:// offline on its view, with its anomalies listed', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'memscope-single-'));
  try {
    const files = [real('forward-fp32.pickle'), join(fixtures, 'crafted', 'snap-p4.pickle')];
    const anomalies = join(dir, 'anomalies.jsonl');
    const lines = memscope(['anomalies', '--json', ...files]);
    assert.ok(lines.includes('"kind"'), 'the crafted file has an anomaly to list');
    (await import('node:fs')).writeFileSync(anomalies, lines);
    const out = join(dir, 'report.html');
    memscope(['html', '--page', join(dist, 'single.html'), '--anomalies', anomalies, '-o', out, ...files]);

    const b = await openOffline(out);
    try {
      const { page, errors } = b;
      const ref = await reference();
      const sel = '.device[data-file="forward-fp32.pickle"][data-device="0"][data-peak-allocated-bytes]';
      await page.waitForSelector(sel, { timeout: 60000 });
      await page.waitForSelector('body[data-status="ready"]', { timeout: 60000 });
      assert.equal(await page.$eval('body', (e) => e.dataset.embedded), '2');
      // The numbers are the file's own: read back from inside the HTML by the same reader.
      const row = await page.$eval(sel, (e) => ({ ...e.dataset }));
      const want = ref.get('forward-fp32.pickle#0');
      assert.equal(Number(row.peakAllocatedBytes), want.peak_allocated_bytes);
      assert.equal(Number(row.events), want.events);
      // The view written by the CLI: the first file, its device 0, the time axis.
      await page.waitForFunction(() => document.querySelector('#view-title').textContent.includes('forward-fp32.pickle'));
      const view = await plot(page);
      assert.equal(view.axis, 'time');
      // Anomalies from `memscope anomalies --json`, listed without any script.
      const items = await page.$$eval('#embedded-anomalies li', (l) => l.map((e) => e.dataset.kind));
      assert.ok(items.length >= 1, 'anomalies listed');
      // The policy: the file's own scripts only, no connection.
      const csp = await page.$eval('meta[http-equiv="Content-Security-Policy"]', (m) => m.content);
      assert.match(csp, /connect-src 'none'/);
      assert.doesNotMatch(csp, /'unsafe-inline'|'unsafe-eval'/);
      // Interactions: a click on an allocation selects it, W zooms in (the view narrows).
      const at = await locate(page, 680);
      await page.mouse.click(at.x, at.y);
      await page.waitForSelector('#detail-body[data-allocation="680"]', { timeout: 20000 });
      const before = await plot(page);
      await page.keyboard.press('KeyW');
      await page.waitForFunction(
        (w) => Number(document.querySelector('#plot').dataset.viewEnd) - Number(document.querySelector('#plot').dataset.viewStart) < w,
        Number(before.viewEnd) - Number(before.viewStart),
      );
      // The other rank opens too.
      await page.click('.device[data-file="snap-p4.pickle"]');
      await page.waitForFunction(() => document.querySelector('#view-title').textContent.includes('snap-p4.pickle'));
      await screenshot(page, 'single-file');
      assert.deepEqual(b.refused, [], 'no request left the file');
      assert.deepEqual(errors, []);
    } finally {
      await b.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a range written by memscope html --range opens on that range, the entries axis renumbered', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'memscope-single-'));
  try {
    const out = join(dir, 'range.html');
    memscope(['html', '--page', join(dist, 'single.html'), '--device', '0', '--range', '500:900', '-o', out, real('forward-fp32.pickle')]);
    const html = (await import('node:fs')).readFileSync(out, 'utf8');
    const hash = /"hash":"([^"]*)"/.exec(html)[1];
    const x = decodeURIComponent(/[&]x=([^&]*)/.exec(hash)[1]).split(',').map(Number);
    assert.equal(x[1] - x[0], 400);

    const b = await openOffline(out);
    try {
      const { page, errors } = b;
      await page.waitForSelector('.device[data-file="forward-fp32.pickle"][data-peak-allocated-bytes]', { timeout: 60000 });
      await page.waitForFunction((x0) => document.querySelector('#plot').dataset.viewStart === String(x0), x[0], { timeout: 30000 });
      const view = await plot(page);
      assert.equal(view.axis, 'events');
      assert.equal(Number(view.viewStart), x[0]);
      assert.equal(Number(view.viewEnd), x[1]);
      // The trimmed file ends at the range's end: its entries are the kept ones.
      const events = Number(await page.$eval('.device[data-file="forward-fp32.pickle"]', (e) => e.dataset.events));
      assert.equal(events, x[1]);
      await screenshot(page, 'single-file-range');
      assert.deepEqual(b.refused, []);
      assert.deepEqual(errors, []);
    } finally {
      await b.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
