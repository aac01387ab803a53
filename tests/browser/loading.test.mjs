// Loading in headless Chromium: folders (picker and drop, read recursively), progress,
// cancelling, and a worker that runs out of memory.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, copyFile, writeFile, rm, stat, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve, browser, screenshot, fixtures, reference, dropFiles } from './harness.mjs';

const real = (name) => join(fixtures, 'corpus', 'real', name);

let server;
let ref;
before(async () => {
  server = await serve();
  ref = await reference();
});
after(async () => server.close());

async function loadedRow(page, file, device = 0, timeout = 30000) {
  const sel = `.device[data-file="${file}"][data-device="${device}"][data-peak-allocated-bytes]`;
  await page.waitForSelector(sel, { timeout });
  return page.$eval(sel, (e) => ({ ...e.dataset }));
}

test('a folder from the picker is read recursively; other files are skipped', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'memscope-folder-'));
  const b = await browser();
  try {
    await mkdir(join(dir, 'job', 'node1'), { recursive: true });
    await copyFile(real('forward-fp32.pickle'), join(dir, 'job', 'rank0.pickle'));
    await copyFile(real('external-annotations.pickle'), join(dir, 'job', 'node1', 'rank1.pickle'));
    await writeFile(join(dir, 'job', 'notes.txt'), 'not a snapshot');
    const { page } = b;
    await page.goto(server.url);
    await page.waitForSelector('body[data-status="empty"]');
    await page.setInputFiles('#folder-input', join(dir, 'job'));
    // Named by their path in the folder picked (two runs' rank0.pickle stay apart).
    const r0 = await loadedRow(page, 'job/rank0.pickle');
    const r1 = await loadedRow(page, 'job/node1/rank1.pickle');
    assert.equal(r0.rank, '0');
    assert.equal(r1.rank, '1');
    assert.equal(Number(r0.peakAllocatedBytes), ref.get('forward-fp32.pickle#0').peak_allocated_bytes);
    assert.equal(Number(r1.peakAllocatedBytes), ref.get('external-annotations.pickle#0').peak_allocated_bytes);
    const files = await page.$$eval('.rank-card', (cards) => cards.map((c) => c.dataset.file));
    assert.deepEqual(files, ['job/rank0.pickle', 'job/node1/rank1.pickle']);
  } finally {
    await b.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test('a dropped folder is walked through the FileSystem entry API', async () => {
  const b = await browser();
  try {
    const { page } = b;
    await page.goto(server.url);
    await page.waitForSelector('body[data-status="empty"]');
    const bytes = [...(await readFile(real('forward-fp32.pickle')))];
    // Chromium cannot synthesize a real folder drop, so this builds the same shape the
    // browser hands over: a DataTransfer whose item is a directory entry (with a nested
    // directory, a snapshot in each, and a file that is not one).
    await page.evaluate((bytes) => {
      const file = (name, fullPath) => ({
        isDirectory: false, isFile: true, name, fullPath,
        file: (ok) => ok(new File([new Uint8Array(bytes)], name)),
      });
      const dir = (name, fullPath, children) => {
        let done = false;
        return {
          isDirectory: true, isFile: false, name, fullPath,
          createReader: () => ({
            readEntries: (ok) => { ok(done ? [] : children); done = true; },
          }),
        };
      };
      const root = dir('job', '/job', [
        file('rank3.pickle', '/job/rank3.pickle'),
        file('readme.md', '/job/readme.md'),
        dir('more', '/job/more', [file('rank4.pickle', '/job/more/rank4.pickle')]),
      ]);
      const item = { kind: 'file', webkitGetAsEntry: () => root, getAsFile: () => null };
      const items = { length: 1, 0: item };
      const event = new Event('drop', { bubbles: true, cancelable: true });
      Object.defineProperty(event, 'dataTransfer', { value: { items } });
      document.dispatchEvent(event);
    }, bytes);
    // Named by their path from the dropped folder.
    await loadedRow(page, 'job/rank3.pickle');
    await loadedRow(page, 'job/more/rank4.pickle');
    const files = await page.$$eval('.rank-card', (cards) => cards.map((c) => c.dataset.file));
    assert.deepEqual(files, ['job/rank3.pickle', 'job/more/rank4.pickle']);
  } finally {
    await b.close();
  }
});

test('progress reaches the file size; queued files can be cancelled', async () => {
  const b = await browser();
  try {
    const { page } = b;
    await page.goto(server.url);
    await page.waitForSelector('body[data-status="empty"]');
    const big = await readFile(real('fullstep-19k-events-cpp-frames.pickle'));
    const workers = await page.evaluate(() => navigator.hardwareConcurrency);
    const input = await page.$('#file-input');
    // More files than workers: the rest queue behind them.
    const files = [];
    for (let i = 0; i < workers + 8; i++) {
      files.push({ name: `rank${i}.pickle`, mimeType: 'application/octet-stream', buffer: big });
    }
    await input.setInputFiles(files);
    // At once, before the workers get through the queue (no waiting for the button's
    // animation or visibility checks).
    await page.evaluate(() => document.getElementById('cancel').click());
    // Every card ends: loaded (it won the race) or cancelled; at least the last queued
    // ones are cancelled, none hangs.
    await page.waitForFunction((n) => {
      const done = document.querySelectorAll('.device[data-peak-allocated-bytes], [data-error]');
      return done.length >= n;
    }, files.length, { timeout: 60000 });
    const errors = await page.$$eval('[data-error]', (e) => e.map((x) => x.dataset.error));
    assert.ok(errors.length >= 3, `${errors.length} cancelled`);
    for (const e of errors) assert.equal(e, 'loading was cancelled');
    assert.equal(await page.isHidden('#cancel'), true);
    // A fresh load after cancelling works, with progress up to the file size.
    await input.setInputFiles([{ name: 'rank-after.pickle', mimeType: 'application/octet-stream', buffer: big }]);
    await loadedRow(page, 'rank-after.pickle');
    const read = await page.$eval('.rank-card[data-file="rank-after.pickle"]', (c) => Number(c.dataset.bytesRead));
    assert.equal(read, (await stat(real('fullstep-19k-events-cpp-frames.pickle'))).size);
    await screenshot(page, 'loading-cancelled');
  } finally {
    await b.close();
  }
});

test('a worker that runs out of memory is reported on its card; other ranks keep working', async () => {
  // V8 limits every wasm memory to 400 pages (25 MiB) here: the 3 MB file fits, the
  // generated 30 MB one does not.
  const dir = await mkdtemp(join(tmpdir(), 'memscope-oom-'));
  const b = await browser(['--js-flags=--wasm-max-mem-pages=400']);
  try {
    const { execFileSync } = await import('node:child_process');
    execFileSync('python3', [join(fixtures, '..', '..', 'bench', 'scale.py'), '--target-mib', '30',
      '--out', join(dir, 'rank1.pickle')], { stdio: 'ignore' });
    const { page } = b;
    await page.goto(server.url);
    await page.waitForSelector('body[data-status="empty"]');
    await page.setInputFiles('#file-input', [real('fullstep-19k-events-cpp-frames.pickle'), join(dir, 'rank1.pickle')]);
    const sel = '[data-file="rank1.pickle"][data-error]';
    await page.waitForSelector(sel, { timeout: 60000 });
    const message = await page.$eval(sel, (e) => e.dataset.error);
    assert.match(message, /worker reading this file stopped/);
    assert.match(message, /memory/);
    const row = await loadedRow(page, 'fullstep-19k-events-cpp-frames.pickle');
    assert.equal(Number(row.events), ref.get('fullstep-19k-events-cpp-frames.pickle#0').events);
    await page.waitForSelector('body[data-status="ready"]');
    await screenshot(page, 'loading-out-of-memory');
  } finally {
    await b.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test('warnings and reasons reach the rank card', async () => {
  // Segments on devices -1, 2**40 and 2**64 (warned, on no device), a pickle with data
  // after its end (refused), and a snapshot with no device (nothing to show, and the
  // warning about the top-level key it did not read).
  const crafted = (name) => join(fixtures, 'crafted', name);
  const b = await browser();
  try {
    const { page } = b;
    await page.goto(server.url);
    await page.waitForSelector('body[data-status="empty"]');
    await dropFiles(page, [
      crafted('devices-not-ordinals.json'),
      crafted('trailing-garbage.pickle'),
      crafted('memo-bomb-64.pickle'),
    ]);
    const row = await loadedRow(page, 'devices-not-ordinals.json');
    assert.equal(Number(row.peakAllocatedBytes), 512);
    const card = (file) => `.rank-card[data-file="${file}"]`;
    const warnings = await page.$eval(`${card('devices-not-ordinals.json')} .rank-warnings`,
      (e) => e.textContent);
    assert.match(warnings, /a segment whose device is not a device ordinal .* left out \(×3\)/);
    const error = await page.waitForSelector(`.rank-error[data-file="trailing-garbage.pickle"]`);
    assert.match(await error.getAttribute('data-error'), /^data after the end of the pickle: 7 more bytes follow/);
    await page.waitForSelector(`${card('memo-bomb-64.pickle')} .rank-status`);
    const nothing = await page.$eval(card('memo-bomb-64.pickle'), (e) => e.textContent);
    assert.match(nothing, /nothing to show: no device has a trace entry or a segment/);
    assert.match(nothing, /unknown top-level key \(its value was skipped, not read\): "user_data"/);
    await screenshot(page, 'warnings-on-cards');
  } finally {
    await b.close();
  }
});
