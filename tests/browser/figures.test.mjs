// Figure exports in headless Chromium: every figure the page draws is exported as SVG
// whose texts (titles, ticks, legends, row and cell labels) are the texts the page shows
// in its DOM, and as PNG of the chosen size × pixel density; the print style is white
// with black text. The figures' drawing itself is checked natively
// (crates/figures/tests, crates/cli/tests/plot.rs); here the question is whether the
// page hands them what it shows.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, mkdir, copyFile, readFile, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve, browser, screenshot, dropFiles, root, fixtures, artifacts } from './harness.mjs';

const FP32 = join(fixtures, 'corpus', 'real', 'forward-fp32.pickle');
const SOURCE = join(fixtures, 'corpus', 'real', 'external-annotations.pickle');

let server;
let work;
before(async () => {
  server = await serve();
  work = await mkdtemp(join(tmpdir(), 'memscope-figures-browser-'));
});
after(async () => {
  await server.close();
  await rm(work, { recursive: true, force: true });
});

/** The bytes of a download triggered by `action`. */
async function downloaded(page, action) {
  const [download] = await Promise.all([page.waitForEvent('download'), action()]);
  return { name: download.suggestedFilename(), bytes: await readFile(await download.path()) };
}

/** Exports `figure` as `format` (svg or png) with the dialog; returns the file. */
async function exportFigure(page, figure, format, { width = 1200, height = 700, density = 1, print = false } = {}) {
  if (await page.$eval('#export-dialog', (e) => e.hidden)) await page.click('#export-open');
  await page.selectOption('#export-format', format);
  await page.selectOption('#export-figure', figure);
  await page.fill('#export-width', String(width));
  await page.fill('#export-height', String(height));
  await page.fill('#export-density', String(density));
  await page.setChecked('#export-print', print);
  const file = await downloaded(page, () => page.click('#export-go'));
  // Each download is confirmed, by its name (a PNG once the browser has drawn it).
  await page.waitForFunction((n) => document.getElementById('export-status').textContent.startsWith(`Saved ${n}: `), file.name);
  // Kept for people to look at (tests/browser/artifacts/figures/).
  await mkdir(join(artifacts, 'figures'), { recursive: true });
  await writeFile(join(artifacts, 'figures', `${print ? 'print-' : ''}${file.name}`), file.bytes);
  return file;
}

/** The SVG's text elements, parsed by the browser: [{text, cls, fill}]. */
function svgTexts(page, svg) {
  return page.evaluate((text) => {
    const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
    if (doc.querySelector('parsererror')) throw new Error('not well-formed SVG');
    return [...doc.querySelectorAll('text')].map((t) => ({
      text: t.textContent, cls: t.getAttribute('class') || '', fill: t.getAttribute('fill'),
    }));
  }, svg);
}

const texts = (els, cls) => els.filter((e) => e.cls === cls).map((e) => e.text);
const domTexts = (page, selector) => page.$$eval(selector, (es) => es.map((e) => e.textContent));

test('rank figures: timeline, segments, call sites and flame graph say what the page shows; PNG at size × density; print style', async () => {
  const b = await browser();
  const { page } = b;
  try {
    await page.goto(server.url);
    await page.waitForSelector('body[data-status="empty"]');
    await dropFiles(page, [FP32]);
    await page.waitForSelector('body[data-status="ready"]', { timeout: 30000 });
    await page.waitForFunction(() => window.memscope.stats().settled);

    // The timeline: ticks, legend, peak and title as on the page.
    const t = await exportFigure(page, 'timeline', 'svg');
    assert.equal(t.name, 'forward-fp32-device0.svg');
    const els = await svgTexts(page, t.bytes.toString('utf8'));
    const ticks = texts(els, 'tick');
    const yTicks = await domTexts(page, '#y-axis .tick');
    const xTicks = await domTexts(page, '#x-axis .tick');
    assert.ok(yTicks.length >= 2 && xTicks.length >= 2);
    assert.deepEqual(ticks, [...yTicks, ...xTicks]);
    const legend = await page.$$eval('#legend li', (ls) => ls.map((l) => [
      l.querySelector('.legend-label').textContent, l.querySelector('.legend-bytes').textContent]));
    assert.ok(legend.length > 0);
    assert.deepEqual(texts(els, 'legend'), legend.map(([label, bytes]) => `${label} — ${bytes}`));
    assert.deepEqual(texts(els, 'mark'), ['peak 531 MiB']);
    assert.equal(texts(els, 'title')[0], 'forward-fp32.pickle — device 0: memory timeline');

    // PNG: the chosen size times the density.
    const png = await exportFigure(page, 'timeline', 'png', { width: 600, height: 400, density: 2 });
    assert.equal(png.name, 'forward-fp32-device0.png');
    assert.equal(png.bytes.subarray(1, 4).toString(), 'PNG');
    assert.deepEqual([png.bytes.readUInt32BE(16), png.bytes.readUInt32BE(20)], [1200, 800]);

    // Print: white background, every text black.
    const p = (await exportFigure(page, 'timeline', 'svg', { print: true })).bytes.toString('utf8');
    assert.match(p, /^<svg [^>]*font-size="30"[^>]*>\n<rect width="1200" height="700" fill="#ffffff"\/>/);
    assert.ok((await svgTexts(page, p)).every((e) => e.fill === '#000000'));

    // Segments and call sites: the rows shown, with their sizes and names.
    for (const [tabName, pane, figure] of [['segments', 'segments', 'segments'], ['lanes', 'sites', 'lanes']]) {
      await page.click(`#tab-${tabName}`);
      // Laid out for the timeline's current x range, its row names printed.
      await page.waitForFunction((w) => {
        const el = document.getElementById(`${w}-scroll`);
        const v = window.memscope.stats().view;
        return document.querySelectorAll(`#${w}-labels .row-name`).length > 0 && el.dataset.x0 !== undefined
          && Math.abs(Number(el.dataset.x0) - v[0]) < 1e-6 * (1 + Math.abs(v[0]))
          && Math.abs(Number(el.dataset.x1) - v[1]) < 1e-6 * (1 + Math.abs(v[1]));
      }, pane);
      const svg = (await exportFigure(page, figure, 'svg')).bytes.toString('utf8');
      const got = await svgTexts(page, svg);
      assert.deepEqual(texts(got, 'row-size'), await domTexts(page, `#${pane}-gutter .row-size`), figure);
      assert.deepEqual(texts(got, 'row-name'), await domTexts(page, `#${pane}-labels .row-name`), figure);
      assert.deepEqual(texts(got, 'tick'), xTicks, figure);
      assert.ok((svg.match(/<rect /g) || []).length > 20, `${figure}: allocations are drawn`);
    }

    // The flame graph: its node labels are the page's (cut with … where narrower).
    await page.click('#tab-flame');
    await page.waitForFunction(() => window.memscope.lenses().flame.nodes > 0
      && document.querySelectorAll('#flame-labels .flame-label').length > 0);
    const flame = await exportFigure(page, 'flame', 'svg');
    assert.equal(flame.name, 'forward-fp32-device0-flame.svg');
    const nodeLabels = texts(await svgTexts(page, flame.bytes.toString('utf8')), 'node-label');
    const domLabels = await domTexts(page, '#flame-labels .flame-label');
    assert.ok(nodeLabels.includes('all') && nodeLabels.includes('(no call stack)'), nodeLabels.join('|'));
    for (const l of nodeLabels) {
      const whole = l.endsWith('…') ? l.slice(0, -1) : l;
      assert.ok(domLabels.some((d) => d.startsWith(whole)), `${l} is not a page label`);
    }

    // A figure that is not shown says so.
    await page.selectOption('#export-figure', 'grid');
    await page.click('#export-go');
    assert.match(await page.$eval('#export-status', (e) => e.textContent), /nothing to export: open the Fleet view's configuration grid/);
    await page.click('#export-close');
  } finally {
    await b.close();
  }
});

test('fleet figures: grid, heatmap, bars and compare curves say what the Fleet view shows', async () => {
  // Three runs named by folder, the last one recording an OOM (bench/fleet.py).
  const set = join(work, 'set');
  const r = spawnSync('python3', [join(root, 'bench', 'fleet.py'), '--source', SOURCE, '--out', set,
    '--ranks', '3', '--iterations', '2', '--oom-rank', '2'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const manifest = JSON.parse(await readFile(join(set, 'manifest.json'), 'utf8'));
  const dir = join(work, 'sweep');
  const runs = ['tp1_pp1', 'tp1_pp2', 'tp2_pp1'];
  for (const [i, run] of runs.entries()) {
    await mkdir(join(dir, run), { recursive: true });
    await copyFile(join(set, manifest.files[i].file), join(dir, run, 'rank0.pickle'));
  }
  const b = await browser();
  const { page } = b;
  try {
    await page.goto(server.url);
    await page.waitForSelector('body[data-status="empty"]');
    await page.setInputFiles('#folder-input', dir);
    await page.waitForFunction(() => document.querySelectorAll('.device[data-peak-allocated-bytes]').length === 3,
      null, { timeout: 60000 });
    await page.click('#view-fleet');
    await page.waitForSelector('#fleet[data-status="ready"]', { timeout: 60000 });
    await page.waitForSelector('#heat-labels .heat-label');
    await page.waitForSelector('.config-grid td.cell');

    // Grid: headers, every cell's two lines, the capacity, the OOM where the page has it.
    const grid = (await exportFigure(page, 'grid', 'svg')).bytes.toString('utf8');
    const g = (await svgTexts(page, grid)).map((e) => e.text);
    const ths = await domTexts(page, '.config-grid th');
    const cellTexts = await domTexts(page, '.config-grid td.cell span');
    assert.ok(cellTexts.includes('OOM'));
    for (const want of [...ths, ...cellTexts]) assert.ok(g.includes(want), `${want} missing from the grid figure`);
    const legend = await domTexts(page, '#fleet-grid .heat-legend > span:not(.heat-scale):not(.hint)');
    for (const want of legend) assert.ok(g.includes(want), `${want} missing from the grid figure`);
    const pageStatus = await page.$$eval('.config-grid td.cell', (tds) => tds.map((t) => `${t.dataset.row}x${t.dataset.col}:${t.dataset.status}`));
    const svgStatus = await page.evaluate((text) => [...new DOMParser().parseFromString(text, 'image/svg+xml')
      .querySelectorAll('rect.cell')].map((r) => `${r.dataset.row}x${r.dataset.col}:${r.dataset.status}`), grid);
    assert.deepEqual(svgStatus, pageStatus);
    assert.ok(pageStatus.includes('2x1:oom'));

    // Heatmap: row labels, scale ends, time ticks.
    const heat = await svgTexts(page, (await exportFigure(page, 'heatmap', 'svg')).bytes.toString('utf8'));
    const names = await page.$$eval('#heat-labels .heat-name', (bs) => bs.map((b) => b.firstChild.textContent));
    assert.deepEqual(texts(heat, 'row-label'), names);
    assert.deepEqual(texts(heat, 'tick'), await domTexts(page, '#heat-axis .tick'));
    const heatLegend = await domTexts(page, '#heat-legend > span:not(.heat-scale)');
    for (const want of heatLegend) assert.ok(heat.some((e) => e.text === want), want);

    // Bars: one per rank, in the table's order.
    const bars = await svgTexts(page, (await exportFigure(page, 'bars', 'svg')).bytes.toString('utf8'));
    const rows = await page.$$eval('.overview tr.rank-row th.rank-name-cell', (ths) => ths.map((t) => t.firstChild.textContent));
    assert.deepEqual(texts(bars, 'row-label'), rows);

    // Compare: the curves' ticks and the sides' labels.
    await page.selectOption('#compare-a', { index: 0 });
    await page.selectOption('#compare-b', { index: 2 });
    await page.click('#compare-run');
    await page.waitForSelector('#compare-result[data-status="ready"]', { timeout: 30000 });
    await page.waitForSelector('#compare-y-axis .tick');
    const cmp = await svgTexts(page, (await exportFigure(page, 'compare', 'svg')).bytes.toString('utf8'));
    const yTicks = await domTexts(page, '#compare-y-axis .tick');
    const xTicks = await domTexts(page, '#compare-x-axis .tick');
    assert.deepEqual(texts(cmp, 'tick'), [...yTicks, ...xTicks]);
    const sides = await domTexts(page, '.compare-facts dd');
    for (const e of cmp.filter((x) => /^[AB]: /.test(x.text))) {
      assert.ok(sides.some((s) => s.startsWith(`${e.text.slice(3)} (`)), e.text);
    }
    const png = await exportFigure(page, 'grid', 'png', { width: 500, height: 300, density: 3 });
    assert.deepEqual([png.bytes.readUInt32BE(16), png.bytes.readUInt32BE(20)], [1500, 900]);
    await screenshot(page, 'figures-fleet');
  } finally {
    await b.close();
  }
});
