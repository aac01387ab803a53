// Hosting, offline and sharing in headless Chromium: the sub-path, the service worker
// (offline reload with the server stopped), the Content-Security-Policy, no requests
// while opening local files, bookmarkable views with back/forward, #url=, the
// postMessage handshake, exports, the help overlay, themes, HiDPI.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { serve, browser, screenshot, dropFiles, reference, fixtures, prefix, locate } from './harness.mjs';

const real = (name) => join(fixtures, 'corpus', 'real', name);

let ref;
before(async () => {
  ref = await reference();
});

/** A second origin serving corpus files, with CORS, and a page that opens memscope. */
async function otherOrigin() {
  const requests = [];
  const server = createServer(async (req, res) => {
    const path = new URL(req.url, 'http://x').pathname;
    requests.push(path);
    if (path === '/opener.html') {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>opener</title>');
      return;
    }
    try {
      const body = await readFile(real(path.slice(1)));
      res.writeHead(200, {
        'content-type': 'application/octet-stream',
        'content-length': body.length,
        'access-control-allow-origin': '*',
      });
      res.end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.2', resolve));
  const { port } = server.address();
  return { url: `http://127.0.0.2:${port}/`, requests, close: () => new Promise((r) => server.close(r)) };
}

async function loaded(page, file, device = 0) {
  const sel = `.device[data-file="${file}"][data-device="${device}"][data-peak-allocated-bytes]`;
  await page.waitForSelector(sel, { timeout: 30000 });
  return page.$eval(sel, (e) => ({ ...e.dataset }));
}

test('served from /memscope/, the page works offline after one visit', async () => {
  const server = await serve();
  const b = await browser();
  try {
    const { page } = b;
    await page.goto(server.url);
    await page.waitForSelector('body[data-status="empty"]');
    // The service worker installs, caches this build and takes control.
    await page.evaluate(async () => {
      await navigator.serviceWorker.ready;
      if (!navigator.serviceWorker.controller) {
        await new Promise((r) => navigator.serviceWorker.addEventListener('controllerchange', r));
      }
    });
    const outside = server.requests.filter((p) => !p.startsWith(prefix));
    assert.deepEqual(outside, [], 'every request stays under the sub-path');
    await server.close();
    // No server: the page, its workers and the parsing still work.
    await page.reload();
    await page.waitForSelector('body[data-status="empty"]');
    await dropFiles(page, [real('forward-fp32.pickle')]);
    const row = await loaded(page, 'forward-fp32.pickle');
    assert.equal(Number(row.peakAllocatedBytes), ref.get('forward-fp32.pickle#0').peak_allocated_bytes);
    await page.waitForSelector('body[data-status="ready"]');
    await screenshot(page, 'share-offline');
  } finally {
    await b.close();
  }
});

test('opening local files makes no network request; the CSP allows no other origin', async () => {
  const server = await serve();
  const other = await otherOrigin();
  const b = await browser();
  try {
    const { page } = b;
    const seen = [];
    page.on('request', (r) => seen.push(r.url()));
    await page.goto(server.url);
    await page.waitForSelector('body[data-status="empty"]');
    await page.evaluate(() => navigator.serviceWorker.ready);
    const before = server.requests.length;
    seen.length = 0;
    await dropFiles(page, [real('forward-fp32.pickle'), real('external-annotations.pickle')]);
    await loaded(page, 'forward-fp32.pickle');
    await loaded(page, 'external-annotations.pickle');
    await page.waitForSelector('body[data-status="ready"]');
    assert.deepEqual(server.requests.slice(before), [], 'no request reached the server');
    assert.deepEqual(seen.filter((u) => !u.startsWith('blob:') && !u.startsWith('data:')), [], 'no request left the page');
    // The policy is in place and refuses another origin.
    const policy = await page.$eval('meta[http-equiv="Content-Security-Policy"]', (m) => m.content);
    assert.match(policy, /connect-src 'self';/);
    assert.match(policy, /default-src 'none'/);
    const blocked = await page.evaluate(async (url) => {
      try {
        await fetch(url + 'forward-fp32.pickle');
        return false;
      } catch {
        return true;
      }
    }, other.url);
    assert.equal(blocked, true);
    assert.deepEqual(other.requests, []);
  } finally {
    await b.close();
    await other.close();
    await server.close();
  }
});

test('#url= loads a snapshot from a CORS address, with the CSP opened for it only', async () => {
  const server = await serve();
  const other = await otherOrigin();
  const b = await browser();
  try {
    const { page } = b;
    const address = other.url + 'forward-fp32.pickle';
    await page.goto(server.url + '#url=' + encodeURIComponent(address));
    const row = await loaded(page, 'forward-fp32.pickle');
    assert.equal(Number(row.peakAllocatedBytes), ref.get('forward-fp32.pickle#0').peak_allocated_bytes);
    const read = await page.$eval('.rank-card', (c) => Number(c.dataset.bytesRead));
    assert.equal(read, (await readFile(real('forward-fp32.pickle'))).length);
    const policy = await page.$eval('meta[http-equiv="Content-Security-Policy"]', (m) => m.content);
    assert.ok(policy.includes(`connect-src 'self' ${new URL(other.url).origin};`), policy);
  } finally {
    await b.close();
    await other.close();
    await server.close();
  }
});

test('another page hands over a snapshot with the postMessage handshake', async () => {
  const server = await serve();
  const other = await otherOrigin();
  const b = await browser();
  try {
    const opener = b.page;
    await opener.goto(other.url + 'opener.html');
    const bytes = [...(await readFile(real('external-annotations.pickle')))];
    const [popup] = await Promise.all([
      b.context.waitForEvent('page'),
      opener.evaluate((url) => {
        window.memscopeWindow = window.open(url);
      }, server.url),
    ]);
    // As Perfetto's protocol: PING until PONG, then the buffer.
    await opener.evaluate(async (bytes) => {
      const w = window.memscopeWindow;
      await new Promise((resolve) => {
        const timer = setInterval(() => w.postMessage('PING', '*'), 100);
        window.addEventListener('message', (e) => {
          if (e.data === 'PONG') {
            clearInterval(timer);
            resolve();
          }
        });
      });
      const buffer = new Uint8Array(bytes).buffer;
      w.postMessage({ memscope: { name: 'rank5.pickle', buffer } }, '*', [buffer]);
    }, bytes);
    const row = await loaded(popup, 'rank5.pickle');
    assert.equal(row.rank, '5');
    assert.equal(Number(row.events), ref.get('external-annotations.pickle#0').events);
  } finally {
    await b.close();
    await other.close();
    await server.close();
  }
});

test('a bookmark restores the view once its files are open; back and forward step through views', async () => {
  const server = await serve();
  const b = await browser();
  try {
    const { page } = b;
    await page.goto(server.url);
    await dropFiles(page, [real('forward-fp32.pickle'), real('fullstep-19k-events-cpp-frames.pickle')]);
    await loaded(page, 'forward-fp32.pickle');
    await loaded(page, 'fullstep-19k-events-cpp-frames.pickle');
    await page.click('.device[data-file="forward-fp32.pickle"]');
    await page.waitForSelector('body[data-status="ready"]');
    // Allocation 680 lives in the last 28 µs: select it, then zoom on the end.
    const at = await locate(page, 680);
    await page.mouse.click(at.x, at.y);
    await page.waitForSelector('#detail-body[data-allocation="680"]');
    await page.keyboard.press('w');
    await page.keyboard.press('d');
    const view = await page.evaluate(() => window.memscope.stats().view);
    // The hash follows the view once it settles (writes are spaced while it moves).
    await page.waitForFunction((x0) => new URLSearchParams(location.hash.slice(1)).get('x')?.startsWith(`${x0},`), view[0]);
    const hash = await page.evaluate(() => location.hash);
    assert.match(hash, /^#v=1&/);
    assert.match(hash, /rank=forward-fp32\.pickle/);
    assert.match(hash, /sel=680/);

    // Back: the selection made by the click is undone.
    await page.goBack();
    await page.waitForFunction(() => !/sel=680/.test(location.hash));
    // Forward: it comes back.
    await page.goForward();
    await page.waitForSelector('#detail-body[data-allocation="680"]');

    // The bookmark in a fresh browser: it names the files it needs, then restores.
    const b2 = await browser();
    try {
      const p2 = b2.page;
      await p2.goto(server.url + hash);
      await p2.waitForSelector('#bookmark-note:not([hidden])');
      const expected = await p2.$$eval('[data-expected-file]', (e) => e.map((x) => x.dataset.expectedFile).sort());
      assert.deepEqual(expected, ['forward-fp32.pickle', 'fullstep-19k-events-cpp-frames.pickle']);
      await dropFiles(p2, [real('fullstep-19k-events-cpp-frames.pickle'), real('forward-fp32.pickle')]);
      await p2.waitForSelector('#detail-body[data-allocation="680"]', { timeout: 30000 });
      const restored = await p2.evaluate(() => window.memscope.stats().view);
      for (let i = 0; i < 4; i++) assert.ok(Math.abs(restored[i] - view[i]) <= 1e-6 * Math.abs(view[i] || 1), `${restored} vs ${view}`);
      assert.match(await p2.$eval('#view-title', (e) => e.textContent), /forward-fp32\.pickle/);
      await p2.waitForSelector('#bookmark-note[hidden]', { state: 'attached' });
      await screenshot(p2, 'share-bookmark-restored');
    } finally {
      await b2.close();
    }
  } finally {
    await b.close();
    await server.close();
  }
});

/** The bytes of a download triggered by `action`. */
async function downloaded(page, action) {
  const [download] = await Promise.all([page.waitForEvent('download'), action()]);
  const path = await download.path();
  return { name: download.suggestedFilename(), bytes: await readFile(path) };
}

test('exports: SVG and PNG at a chosen size, summaries as CSV and JSON', async () => {
  const server = await serve();
  const b = await browser();
  try {
    const { page } = b;
    await page.goto(server.url);
    await dropFiles(page, [real('forward-fp32.pickle'), real('four-devices-no-time-us.pickle')]);
    await loaded(page, 'forward-fp32.pickle');
    await loaded(page, 'four-devices-no-time-us.pickle');
    await page.click('.device[data-file="forward-fp32.pickle"]');
    await page.waitForSelector('body[data-status="ready"]');
    await page.click('#export-open');
    await page.fill('#export-width', '1200');
    await page.fill('#export-height', '700');

    await page.selectOption('#export-format', 'svg');
    const svg = await downloaded(page, () => page.click('#export-go'));
    assert.equal(svg.name, 'forward-fp32-device0.svg');
    const text = svg.bytes.toString('utf8');
    assert.match(text, /<svg [^>]*width="1200" height="700"/);
    assert.ok((text.match(/<rect /g) || []).length > 100, 'bands are vector rectangles');
    assert.match(text, />512 MiB</);
    assert.match(text, />\d+ ms</);
    assert.match(text, /peak 531 MiB/);
    assert.match(text, /forward-fp32\.pickle — device 0/);

    await page.selectOption('#export-format', 'png');
    const png = await downloaded(page, () => page.click('#export-go'));
    assert.equal(png.bytes.subarray(1, 4).toString(), 'PNG');
    assert.equal(png.bytes.readUInt32BE(16), 1200);
    assert.equal(png.bytes.readUInt32BE(20), 700);

    await page.selectOption('#export-format', 'csv');
    const csv = (await downloaded(page, () => page.click('#export-go'))).bytes.toString('utf8').trim().split('\r\n');
    assert.equal(csv[0].split(',')[8], 'peak_allocated_bytes');
    assert.equal(csv.length, 1 + 2, 'a header and one row per (file, device)');
    for (const line of csv.slice(1)) {
      const f = line.split(',');
      assert.equal(Number(f[8]), ref.get(`${f[0]}#${f[2]}`).peak_allocated_bytes);
    }

    await page.selectOption('#export-format', 'json');
    const lines = (await downloaded(page, () => page.click('#export-go'))).bytes.toString('utf8').trim().split('\n');
    const got = lines.map((l) => JSON.parse(l));
    for (const g of got) assert.deepEqual(g, ref.get(`${g.file}#${g.device}`));
    assert.equal(got.length, 2);
  } finally {
    await b.close();
    await server.close();
  }
});

test('? shows every key; the theme is remembered; the canvas is sharp on HiDPI; lists have roles', async () => {
  const server = await serve();
  const b = await browser();
  try {
    const { page } = b;
    await page.goto(server.url);
    await page.waitForSelector('body[data-status="empty"]');
    await page.keyboard.press('?');
    await page.waitForSelector('#help-overlay:not([hidden])');
    const keys = await page.$eval('#help-overlay', (e) => e.innerText);
    for (const k of ['W', 'S', 'A', 'D', 'Alt', 'Esc', 'F', '←', '→', 'PgDn', 'drag on the ruler', 'in Find']) assert.ok(keys.includes(k), k);
    await screenshot(page, 'share-help');
    await page.keyboard.press('Escape');
    await page.waitForSelector('#help-overlay[hidden]', { state: 'attached' });

    assert.match(await page.$eval('.privacy', (e) => e.textContent), /nothing is uploaded/);
    await page.click('#theme'); // system → light
    await page.click('#theme'); // light → dark
    assert.equal(await page.$eval('html', (e) => e.dataset.theme), 'dark');
    await page.reload();
    await page.waitForSelector('body[data-status="empty"]');
    assert.equal(await page.$eval('html', (e) => e.dataset.theme), 'dark');
    await dropFiles(page, [real('forward-fp32.pickle')]);
    await page.waitForSelector('body[data-status="ready"]');
    const corner = await page.evaluate(() => {
      const c = document.getElementById('canvas');
      const copy = document.createElement('canvas');
      copy.width = 1;
      copy.height = 1;
      const ctx = copy.getContext('2d');
      ctx.drawImage(c, 0, 0, 1, 1, 0, 0, 1, 1);
      return [...ctx.getImageData(0, 0, 1, 1).data];
    });
    assert.ok(corner[0] < 60 && corner[1] < 60 && corner[2] < 60, `dark background, got ${corner}`);
    await screenshot(page, 'share-dark');
    const roles = await page.$$eval('#ranks[role="list"] > [role="listitem"]', (e) => e.length);
    assert.equal(roles, 1);
  } finally {
    await b.close();
  }
  // HiDPI: the canvas has two device pixels per CSS pixel.
  const hidpi = await browser([], { deviceScaleFactor: 2 });
  try {
    const { page } = hidpi;
    await page.goto(server.url);
    await dropFiles(page, [real('forward-fp32.pickle')]);
    await page.waitForSelector('body[data-status="ready"]');
    const [w, cw] = await page.$eval('#canvas', (c) => [c.width, c.clientWidth]);
    assert.equal(w, 2 * cw);
  } finally {
    await hidpi.close();
    await server.close();
  }
});
