// The single HTML file (`memscope html`, and the page's Export… → One HTML file, both on
// dist/single.html) opened from file:// in headless Chromium with the network off and
// every request that is not the file's own (file:, blob:, data:) refused: the ranks load
// from inside the file through the workers, the embedded view is restored (device, axis,
// visible range, selection, search), the embedded anomalies are listed, the page's
// interactions work, a file exports again from inside itself, nothing asks the network.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { browser, serve, dropFiles, screenshot, reference, fixtures, root, dist, locate } from './harness.mjs';

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
    writeFileSync(anomalies, lines);
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
    const html = readFileSync(out, 'utf8');
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

/** Exports One HTML file from the dialog with these options; resolves to the saved path. */
async function exportHtml(page, dir, name, { ranks, range }) {
  if (await page.$eval('#export-dialog', (e) => e.hidden)) await page.click('#export-open');
  await page.selectOption('#export-format', 'html');
  await page.selectOption('#export-html-ranks', ranks);
  await page.selectOption('#export-html-range', range);
  await page.click('#export-go');
  await page.waitForSelector('#export-html-save:not([hidden])', { timeout: 60000 });
  const bytes = Number(await page.$eval('#export-html-save', (e) => e.dataset.bytes));
  const said = await page.$eval('#export-status', (e) => e.textContent);
  assert.match(said, /ready to save/);
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export-html-save')]);
  // The download is confirmed by its name.
  await page.waitForFunction((n) => document.getElementById('export-status').textContent.startsWith(`Saved ${n}: one HTML file, `), download.suggestedFilename());
  const path = join(dir, name);
  await download.saveAs(path);
  assert.equal(statSync(path).size, bytes, 'the size shown is the size saved');
  return path;
}

test('Export… → One HTML file from the page: the view comes back, trimmed or whole, and the file exports again', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'memscope-single-'));
  const server = await serve();
  const b = await browser();
  try {
    const { page } = b;
    await page.goto(server.url);
    await page.waitForSelector('body[data-status="empty"]');
    await dropFiles(page, [real('forward-fp32.pickle'), real('external-annotations.pickle')]);
    await page.waitForSelector('.device[data-file="external-annotations.pickle"][data-peak-allocated-bytes]', { timeout: 60000 });
    await page.click('.device[data-file="forward-fp32.pickle"]');
    await page.waitForFunction(() => document.querySelector('#view-title').textContent.includes('forward-fp32.pickle'));
    await page.waitForSelector('body[data-status="ready"]');
    // A view: zoomed in, an allocation selected, a search.
    const at = await locate(page, 680);
    await page.mouse.click(at.x, at.y);
    await page.waitForSelector('#detail-body[data-allocation="680"]');
    await page.keyboard.press('KeyW');
    await page.keyboard.press('KeyW');
    await page.waitForFunction(() => window.memscope.stats().settled);
    await page.fill('#search', 'swiglu');
    // A moment chosen (one entry after the peak; the peak itself is the default) and the
    // flame graph open under the timeline.
    // (The selection moved the moment to the allocation: wait for the peak's answer.)
    const selectedAt = await page.$eval('#moment-panel', (e) => e.dataset.moment || '');
    await page.click('#moment-peak');
    await page.waitForFunction(
      (was) => !['', was].includes(document.querySelector('#moment-panel').dataset.moment || ''),
      selectedAt,
    );
    const peak = Number(await page.$eval('#moment-panel', (e) => e.dataset.moment));
    await page.click('#moment-next');
    const moment = String(peak + 1);
    await page.waitForSelector(`#moment-panel[data-moment="${moment}"]`);
    await page.click('#tab-flame');
    await page.waitForSelector('#tab-flame[aria-selected="true"]');
    await page.waitForFunction(() => window.memscope.stats().settled);
    const shown = await plot(page);

    // Whole trace, every rank: the same view, selection and search.
    const whole = await exportHtml(page, dir, 'whole.html', { ranks: 'all', range: 'whole' });
    // The visible range of the shown rank only.
    const part = await exportHtml(page, dir, 'part.html', { ranks: 'shown', range: 'visible' });
    assert.ok(statSync(part).size < statSync(whole).size);

    const w = await openOffline(whole);
    try {
      const p = w.page;
      await p.waitForSelector('.device[data-file="external-annotations.pickle"][data-peak-allocated-bytes]', { timeout: 60000 });
      await p.waitForSelector('#detail-body[data-allocation="680"]', { timeout: 30000 });
      await p.waitForFunction((s) => document.querySelector('#plot').dataset.viewStart === s, shown.viewStart, { timeout: 30000 });
      const v = await plot(p);
      assert.equal(v.viewEnd, shown.viewEnd);
      assert.equal(v.axis, shown.axis);
      assert.equal(await p.$eval('#search', (e) => e.value), 'swiglu');
      await p.waitForSelector(`#moment-panel[data-moment="${moment}"]`, { timeout: 30000 });
      await p.waitForSelector('#tab-flame[aria-selected="true"]');
      // Exported again from inside the file: the page is the file itself.
      const again = await exportHtml(p, dir, 'again.html', { ranks: 'shown', range: 'whole' });
      const a = await openOffline(again);
      try {
        await a.page.waitForSelector('.device[data-file="forward-fp32.pickle"][data-peak-allocated-bytes]', { timeout: 60000 });
        assert.equal(await a.page.$$eval('.device', (l) => l.length), 1);
        assert.deepEqual(a.refused, []);
        assert.deepEqual(a.errors, []);
      } finally {
        await a.close();
      }
      assert.deepEqual(w.refused, []);
      assert.deepEqual(w.errors, []);
    } finally {
      await w.close();
    }

    const t = await openOffline(part);
    try {
      const p = t.page;
      await p.waitForSelector('.device[data-file="forward-fp32.pickle"][data-peak-allocated-bytes]', { timeout: 60000 });
      await p.waitForSelector('body[data-status="ready"]', { timeout: 30000 });
      assert.equal(await p.$$eval('.device', (l) => l.length), 1);
      await p.waitForSelector('#tab-flame[aria-selected="true"]');
      // Same width of time shown; the trimmed file's clock starts at its first kept entry.
      await p.waitForFunction(() => window.memscope.stats().settled);
      const v = await plot(p);
      assert.ok(Math.abs((v.viewEnd - v.viewStart) - (shown.viewEnd - shown.viewStart)) < 1e-6 * shown.viewEnd);
      await screenshot(p, 'single-file-exported-range');
      assert.deepEqual(t.refused, []);
      assert.deepEqual(t.errors, []);
    } finally {
      await t.close();
    }
  } finally {
    await b.close();
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test('a worker that cannot start inside the file says so on the file\'s card', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'memscope-single-'));
  try {
    const out = join(dir, 'broken.html');
    memscope(['html', '--page', join(dist, 'single.html'), '-o', out, real('forward-fp32.pickle')]);
    // As a browser without what the worker needs would: its start throws.
    const html = readFileSync(out, 'utf8');
    const broken = html.replace('await wasm_bindgen({ module_or_path: wasm });', "throw new Error('no wasm here');");
    assert.notEqual(broken, html);
    writeFileSync(out, broken);
    const b = await openOffline(out);
    try {
      const card = await b.page.waitForSelector('.rank-error[data-file="forward-fp32.pickle"]', { timeout: 60000 });
      const text = await card.evaluate((e) => e.textContent + ' ' + e.dataset.error);
      assert.match(text, /could not start memscope's worker here \(inside this file/);
      assert.match(text, /no wasm here/);
    } finally {
      await b.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('Export… → One HTML file carries the anomalies the page found, listed on open as memscope anomalies finds them', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'memscope-single-'));
  const server = await serve();
  const b = await browser();
  try {
    const { page } = b;
    const files = [real('forward-fp32.pickle'), join(fixtures, 'crafted', 'snap-p4.pickle')];
    // The oracle: the CLI on the same files.
    const cli = memscope(['anomalies', '--json', ...files])
      .split('\n')
      .filter((l) => l.includes('"kind"'))
      .map((l) => JSON.parse(l))
      .map((a) => `${a.kind} ${a.file} ${a.device}`)
      .sort();
    assert.ok(cli.length >= 1, 'the crafted file has an anomaly');
    await page.goto(server.url);
    await page.waitForSelector('body[data-status="empty"]');
    await dropFiles(page, files);
    // Every rank examined (the Fleet view, hidden, is ready).
    await page.waitForSelector('#fleet[data-status="ready"]', { state: 'attached', timeout: 60000 });
    await page.waitForSelector('body[data-status="ready"]');
    const path = await exportHtml(page, dir, 'anomalies.html', { ranks: 'all', range: 'whole' });
    assert.match(await page.$eval('#export-status', (e) => e.textContent), new RegExp(`${cli.length} anomal(y|ies) listed on open`));

    const o = await openOffline(path);
    try {
      const listed = await o.page.$$eval('#embedded-anomalies li', (l) =>
        l.map((e) => `${e.dataset.kind} ${/^\S+ (.+) \(device (\d+)\):/.exec(e.textContent).slice(1).join(' ')}`),
      );
      assert.deepEqual(listed.sort(), cli);
      await o.page.waitForSelector('.device[data-file="snap-p4.pickle"][data-peak-allocated-bytes]', { timeout: 60000 });
      assert.deepEqual(o.refused, []);
      assert.deepEqual(o.errors, []);
    } finally {
      await o.close();
    }
  } finally {
    await b.close();
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
});
