// How a load starts, provoked deterministically: a file dropped while the page's code
// is still loading, a bookmark of a rank's second device applied the moment the rank is
// loaded, a browser that refuses workers, a worker whose script cannot load, a browser
// without WebGL2. Each used to leave the page waiting for ever, or empty with no reason
// given.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { serve, browser, dropFiles, fixtures } from './harness.mjs';

const real = (name) => join(fixtures, 'corpus', 'real', name);

let server;
before(async () => {
  server = await serve();
});
after(async () => {
  await server.close();
});

test('a file dropped while the page is still starting is opened once it starts', async () => {
  const b = await browser();
  try {
    const { page } = b;
    // The page's wasm arrives late, as on a slow link or a loaded machine.
    let release;
    const held = new Promise((resolve) => (release = resolve));
    await page.route(/memscope-app-[^/]*_bg\.wasm$/, async (route) => {
      await held;
      await route.continue();
    });
    await page.goto(server.url, { waitUntil: 'domcontentloaded' });
    assert.equal(await page.evaluate(() => document.body.dataset.status), 'starting');
    await dropFiles(page, [real('forward-fp32.pickle')]);
    assert.equal(await page.evaluate(() => document.body.dataset.status), 'starting', 'dropped before the start');
    release();
    await page.waitForSelector('.device[data-file="forward-fp32.pickle"][data-peak-allocated-bytes]', { timeout: 60000 });
    await page.waitForSelector('body[data-status="ready"]', { timeout: 60000 });
    // The page it was dropped on is still the page (the browser did not open the file).
    assert.match(page.url(), /\/memscope\/(#.*)?$/);
    assert.deepEqual(b.errors, []);
  } finally {
    await b.close();
  }
});

test('a bookmark of a rank\'s second device draws that device', async () => {
  const b = await browser();
  try {
    const { page } = b;
    const file = 'snapshot-action.pickle';
    await page.goto(`${server.url}#v=1&files=${file}&rank=${file}&device=1`);
    await page.waitForSelector('body[data-status="empty"]');
    await dropFiles(page, [real(file)]);
    await page.waitForSelector('body[data-status="ready"]', { timeout: 60000 });
    assert.match(await page.evaluate(() => document.body.dataset.device), /^\d+:1$/);
    await page.waitForFunction(() => window.memscope.stats().settled);
    assert.ok((await page.evaluate(() => window.memscope.stats().instances)) > 0, 'device 1 is drawn');
    assert.deepEqual(b.errors, []);
  } finally {
    await b.close();
  }
});

test('a browser that refuses workers says so on the file\'s card', async () => {
  const b = await browser();
  try {
    const { page } = b;
    // As a policy forbidding workers would.
    await page.route(/\/memscope\/(#.*)?$/, async (route) => {
      const response = await route.fetch();
      const html = await response.text();
      const strict = html.replace("worker-src 'self' blob:", "worker-src 'none'");
      assert.notEqual(strict, html);
      await route.fulfill({ response, body: strict });
    });
    await page.goto(server.url);
    await page.waitForSelector('body[data-status="empty"]');
    await dropFiles(page, [real('forward-fp32.pickle')]);
    const card = await page.waitForSelector('.rank-error[data-file="forward-fp32.pickle"]', { timeout: 60000 });
    const text = await card.evaluate((e) => e.textContent + ' ' + (e.dataset.error || ''));
    assert.match(text, /refuses to start memscope's worker here/);
    await page.waitForSelector('body[data-status="failed"]');
    assert.match(await page.$eval('#empty-note', (e) => e.textContent), /cards on the left say why/);
  } finally {
    await b.close();
  }
});

test('a worker whose script cannot be loaded says so on the file\'s card', async () => {
  const b = await browser();
  try {
    const { page } = b;
    await b.context.route(/memscope-worker\.js$/, (route) => route.fulfill({ status: 404, body: 'gone' }));
    await page.goto(server.url);
    await page.waitForSelector('body[data-status="empty"]');
    await dropFiles(page, [real('forward-fp32.pickle')]);
    const card = await page.waitForSelector('.rank-error[data-file="forward-fp32.pickle"]', { timeout: 60000 });
    const text = await card.evaluate((e) => e.textContent + ' ' + (e.dataset.error || ''));
    assert.match(text, /could not start memscope's worker here/);
    await page.waitForSelector('body[data-status="failed"]');
  } finally {
    await b.close();
  }
});

test('without WebGL2 the files load and the timeline\'s place says why it is empty', async () => {
  const b = await browser(['--disable-webgl', '--disable-webgl2']);
  try {
    const { page } = b;
    await page.goto(server.url);
    await page.waitForSelector('body[data-status="empty"]');
    await dropFiles(page, [real('forward-fp32.pickle')]);
    await page.waitForSelector('.device[data-file="forward-fp32.pickle"][data-peak-allocated-bytes]', { timeout: 60000 });
    await page.waitForSelector('#no-trace:not([hidden])');
    assert.match(await page.$eval('#no-trace', (e) => e.textContent), /cannot draw the memory timeline in this browser/);
    assert.equal(await page.$eval('#plot', (e) => e.hidden), true);
  } finally {
    await b.close();
  }
});
