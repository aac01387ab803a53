// The page as a whole (issue 12): what the user sees before any file and after a
// cancelled load, the lens pane that can be made taller with the toolbar in reach,
// the y scale kept in a bookmark, and wording that counts right. Expected texts and
// numbers are the rules, never read back from memscope.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { serve, browser, screenshot, dropFiles, fixtures } from './harness.mjs';

const real = (name) => join(fixtures, 'corpus', 'real', name);
const bad = (name) => join(fixtures, 'corpus', 'bad', name);

let server;
before(async () => {
  server = await serve();
});
after(async () => server.close());

/** Whether element `id` is laid out and visible. */
const visible = (page, id) =>
  page.$eval(`#${id}`, (e) => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden');

test('before any file the side column says what to do; when no file could be opened the prompt comes back saying why', async () => {
  const b = await browser();
  const { page, errors } = b;
  try {
    await page.goto(server.url);
    await page.waitForSelector('body[data-status="empty"]');
    // No empty boxes: the moment panel waits for a device; the column says what to do.
    assert.equal(await visible(page, 'moment-panel'), false, 'no empty moment panel');
    assert.match(await page.$eval('#detail-body', (e) => e.textContent), /Open a snapshot/);
    assert.equal(await visible(page, 'empty-state'), true);
    // Two files, neither a snapshot (the same path as a cancelled load: nothing open).
    await dropFiles(page, [bad('not-a-snapshot-dict.pickle'), bad('numpy-globals.pickle')]);
    await page.waitForSelector('body[data-status="failed"]', { timeout: 30000 });
    assert.equal(await visible(page, 'workspace'), false, 'no empty toolbar and tabs');
    assert.equal(await visible(page, 'empty-state'), true, 'the prompt again');
    assert.match(await page.$eval('#empty-note', (e) => e.textContent), /None of the files could be opened/);
    assert.equal(await visible(page, 'moment-panel'), false);
    // These names carry no rank number: they are files, counted in words.
    assert.equal(await page.$eval('#load-summary', (e) => e.textContent), '0 files loaded, 2 failed');
    await screenshot(page, 'page-nothing-open');
    // Opening a snapshot after that shows it.
    await dropFiles(page, [real('forward-fp32.pickle')]);
    await page.waitForSelector('body[data-status="ready"]', { timeout: 30000 });
    assert.equal(await visible(page, 'workspace'), true);
    assert.equal(await visible(page, 'empty-state'), false);
    assert.equal(await visible(page, 'moment-panel'), true);
    assert.equal(await page.$eval('#load-summary', (e) => e.textContent), '1 file loaded, 2 failed');
    // Errors the page logged for the bad files are the cards' own, nothing else.
    assert.ok(errors.every((e) => /could not be opened|not a snapshot|refus/i.test(e)), errors.join('\n'));
  } finally {
    await b.close();
  }
});

test('the lens pane can be made taller; scrolled down, the toolbar stays in reach', async () => {
  const b = await browser();
  const { page, errors } = b;
  try {
    await page.setViewportSize({ width: 1400, height: 700 });
    await page.goto(server.url);
    await dropFiles(page, [real('forward-fp32.pickle')]);
    await page.waitForSelector('body[data-status="ready"]', { timeout: 30000 });
    assert.equal(await page.$eval('#lenses', (e) => getComputedStyle(e).resize), 'vertical');
    const before = await page.$eval('#segments-canvas', (c) => c.getBoundingClientRect().height);
    // What dragging its corner does: a taller pane; its canvas follows.
    await page.$eval('#lenses', (e) => { e.style.height = `${e.getBoundingClientRect().height + 300}px`; });
    await page.waitForFunction((h) => document.getElementById('segments-canvas').getBoundingClientRect().height > h + 200, before);
    await page.waitForFunction(() => {
      const c = document.getElementById('segments-canvas');
      return Math.abs(c.width - c.getBoundingClientRect().width * devicePixelRatio) <= 1
        && Math.abs(c.height - c.getBoundingClientRect().height * devicePixelRatio) <= 1;
    });
    // Scrolled to the bottom of the workspace, the toolbar is still at its top.
    await page.$eval('#workspace', (w) => { w.scrollTop = w.scrollHeight; });
    const { toolbar, workspace, scrolled } = await page.$eval('#workspace', (w) => ({
      toolbar: w.querySelector('.toolbar').getBoundingClientRect().top,
      workspace: w.getBoundingClientRect().top,
      scrolled: w.scrollTop,
    }));
    assert.ok(scrolled > 100, `the workspace scrolls (${scrolled})`);
    assert.ok(toolbar >= workspace - 1 && toolbar < workspace + 20, `toolbar at ${toolbar}, workspace at ${workspace}`);
    await page.click('#fit');
    await screenshot(page, 'page-lens-pane-tall');
    assert.deepEqual(errors, []);
  } finally {
    await b.close();
  }
});

test('the y scale is part of a bookmark', async () => {
  const b = await browser();
  const { page, errors } = b;
  try {
    await page.goto(server.url);
    await dropFiles(page, [real('forward-fp32.pickle')]);
    await page.waitForSelector('body[data-status="ready"]', { timeout: 30000 });
    await page.click('#y-scale');
    await page.waitForSelector('#plot[data-y-scale="allocated"]');
    const y = await page.evaluate(() => window.memscope.stats().view.slice(2));
    await page.waitForFunction(() => new URLSearchParams(location.hash.slice(1)).get('yscale') === 'allocated');
    const hash = await page.evaluate(() => location.hash);
    const b2 = await browser();
    try {
      const p2 = b2.page;
      await p2.goto(server.url + hash);
      await dropFiles(p2, [real('forward-fp32.pickle')]);
      await p2.waitForSelector('#plot[data-y-scale="allocated"]', { timeout: 30000 });
      assert.equal(await p2.$eval('#y-scale', (e) => e.textContent), 'y: allocated');
      const y2 = await p2.evaluate(() => window.memscope.stats().view.slice(2));
      assert.deepEqual(y2, y);
      assert.deepEqual(b2.errors, []);
    } finally {
      await b2.close();
    }
    // Back to reserved: the link no longer says so (reserved is the default).
    await page.click('#y-scale');
    await page.waitForFunction(() => !new URLSearchParams(location.hash.slice(1)).has('yscale'));
    assert.deepEqual(errors, []);
  } finally {
    await b.close();
  }
});

test('two runs with the same file names: named by their path in cards, titles and the URL; a bookmark restores the right one', async () => {
  // A folder as a user picks it: two runs, each with a rank0.pickle (different files).
  const { mkdtemp, mkdir, copyFile, rm } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const root = await mkdtemp(join(tmpdir(), 'memscope-runs-'));
  const runs = join(root, 'runs');
  await mkdir(join(runs, 'tp2_pp1'), { recursive: true });
  await mkdir(join(runs, 'tp2_pp2'), { recursive: true });
  await copyFile(real('forward-fp32.pickle'), join(runs, 'tp2_pp1', 'rank0.pickle'));
  await copyFile(real('external-annotations.pickle'), join(runs, 'tp2_pp2', 'rank0.pickle'));
  const pp1 = 'runs/tp2_pp1/rank0.pickle';
  const pp2 = 'runs/tp2_pp2/rank0.pickle';
  const b = await browser();
  const { page, errors } = b;
  try {
    await page.goto(server.url);
    await page.waitForSelector('body[data-status="empty"]');
    await (await page.$('#folder-input')).setInputFiles(runs);
    for (const f of [pp1, pp2]) await page.waitForSelector(`.device[data-file="${f}"]`, { timeout: 30000 });
    const cards = await page.$$eval('.rank-card .rank-name', (e) => e.map((x) => x.textContent).sort());
    assert.deepEqual(cards, [pp1, pp2]);
    await page.click(`.device[data-file="${pp2}"]`);
    await page.waitForFunction((f) => document.getElementById('view-title').textContent.startsWith(f), pp2);
    await page.waitForFunction((f) => new URLSearchParams(location.hash.slice(1)).get('rank') === f, pp2);
    const hash = await page.evaluate(() => location.hash);
    const params = new URLSearchParams(hash.slice(1));
    assert.deepEqual(params.get('files').split(',').sort(), [pp1, pp2]);
    // Reopened later: the bookmark shows the file it named, not the other rank0.pickle.
    const b2 = await browser();
    try {
      const p2 = b2.page;
      await p2.goto(server.url + hash);
      await p2.waitForSelector('#bookmark-note:not([hidden])');
      const expected = await p2.$$eval('[data-expected-file]', (e) => e.map((x) => x.dataset.expectedFile).sort());
      assert.deepEqual(expected, [pp1, pp2]);
      await (await p2.$('#folder-input')).setInputFiles(runs);
      await p2.waitForSelector('#bookmark-note[hidden]', { state: 'attached', timeout: 30000 });
      await p2.waitForFunction((f) => document.getElementById('view-title').textContent.startsWith(f), pp2);
      const shown = await p2.$eval('.device.selected', (e) => e.dataset.file);
      assert.equal(shown, pp2);
      assert.deepEqual(b2.errors, []);
    } finally {
      await b2.close();
    }
    assert.deepEqual(errors, []);
  } finally {
    await b.close();
    await rm(root, { recursive: true, force: true });
  }
});
