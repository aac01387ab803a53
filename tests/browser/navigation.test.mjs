// Timeline navigation in headless Chromium: keys (by physical key), wheel, drag, box
// zoom, fit, axis toggle, axes labels and the hover readout.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { serve, browser, screenshot, dropFiles, fixtures, locate } from './harness.mjs';

let server;
let b;
let page;
before(async () => {
  server = await serve();
  b = await browser();
  page = b.page;
  await page.goto(server.url);
  await dropFiles(page, [join(fixtures, 'corpus', 'real', 'forward-fp32.pickle')]);
  await page.waitForSelector('body[data-status="ready"]');
});
after(async () => {
  await b.close();
  await server.close();
});

const view = () => page.evaluate(() => window.memscope.stats().view);
const span = (v) => v[1] - v[0];
const canvasBox = () => page.$eval('#canvas', (c) => {
  const r = c.getBoundingClientRect();
  return { x: r.left, y: r.top, w: r.width, h: r.height };
});

test('W/S zoom and A/D pan by physical key; F fits', async () => {
  await page.keyboard.press('f');
  const fit = await view();
  await page.keyboard.press('w');
  const zoomed = await view();
  assert.ok(Math.abs(span(zoomed) - 0.8 * span(fit)) < 1e-6 * span(fit), 'W zooms in by 20%');
  await page.keyboard.press('d');
  const panned = await view();
  assert.ok(panned[0] > zoomed[0], 'D pans right');
  assert.ok(Math.abs(span(panned) - span(zoomed)) < 1e-6 * span(fit));
  await page.keyboard.press('a');
  await page.keyboard.press('a');
  assert.ok((await view())[0] < panned[0], 'A pans left');
  await page.keyboard.press('s');
  assert.ok(span(await view()) > span(zoomed), 'S zooms out');
  // A non-QWERTY layout sends another key for the same physical key: still zooms.
  await page.keyboard.press('f');
  await page.dispatchEvent('body', 'keydown', { code: 'KeyW', key: 'z' });
  assert.ok(span(await view()) < span(fit));
  await page.keyboard.press('f');
  assert.deepEqual(await view(), fit);
});

test('Ctrl+wheel zooms at the cursor; drag pans; double-click fits', async () => {
  await page.keyboard.press('f');
  const fit = await view();
  const box = await canvasBox();
  const at = { x: box.x + box.w * 0.25, y: box.y + box.h / 2 };
  await page.mouse.move(at.x, at.y);
  const xAt = (v) => v[0] + 0.25 * span(v);
  await page.keyboard.down('Control');
  await page.mouse.wheel(0, -300);
  await page.keyboard.up('Control');
  const zoomed = await view();
  assert.ok(span(zoomed) < span(fit) * 0.6);
  // The point under the cursor stays put.
  assert.ok(Math.abs(xAt(zoomed) - xAt(fit)) < span(fit) * 1e-3);
  // Drag left by a quarter of the width: the view moves right by a quarter span.
  await page.mouse.move(at.x + 200, at.y);
  await page.mouse.down();
  await page.mouse.move(at.x + 100, at.y, { steps: 4 });
  await page.mouse.move(at.x, at.y, { steps: 4 });
  await page.mouse.up();
  const dragged = await view();
  const expected = (200 / box.w) * span(zoomed);
  assert.ok(Math.abs(dragged[0] - zoomed[0] - expected) < expected * 0.05, `moved ${dragged[0] - zoomed[0]} vs ${expected}`);
  await page.mouse.dblclick(at.x, at.y);
  assert.deepEqual(await view(), fit);
});

test('Alt+drag zooms to a box; Esc clears the selection', async () => {
  await page.keyboard.press('f');
  const fit = await view();
  const box = await canvasBox();
  await page.keyboard.down('Alt');
  await page.mouse.move(box.x + box.w * 0.2, box.y + box.h * 0.1);
  await page.mouse.down();
  await page.mouse.move(box.x + box.w * 0.4, box.y + box.h * 0.5, { steps: 5 });
  await page.mouse.up();
  await page.keyboard.up('Alt');
  const v = await view();
  assert.ok(Math.abs(span(v) - 0.2 * span(fit)) < 0.01 * span(fit));
  assert.ok(Math.abs(v[0] - (fit[0] + 0.2 * span(fit))) < 0.01 * span(fit));
  // y: from 50% to 90% of the height (top of the canvas is the highest bytes).
  assert.ok(Math.abs(v[2] - (fit[2] + 0.5 * (fit[3] - fit[2]))) < 0.01 * (fit[3] - fit[2]));
  assert.ok(Math.abs(v[3] - (fit[2] + 0.9 * (fit[3] - fit[2]))) < 0.01 * (fit[3] - fit[2]));
  await screenshot(page, 'navigation-box-zoom');
  // Select something, then Esc clears it.
  await page.keyboard.press('f');
  const at = await locate(page, 680);
  await page.mouse.click(at.x, at.y);
  await page.waitForSelector('#detail-body[data-allocation="680"]');
  await page.keyboard.press('Escape');
  await page.waitForSelector('#detail-body .hint');
});

test('axes are labelled in bytes and time; hover shows the wall clock; the axis toggles to events', async () => {
  await page.keyboard.press('f');
  const yLabels = await page.$$eval('#y-axis .tick', (t) => t.map((e) => e.textContent));
  assert.ok(yLabels.some((l) => / MiB$/.test(l)), yLabels.join('|'));
  const xLabels = await page.$$eval('#x-axis .tick', (t) => t.map((e) => e.textContent));
  assert.ok(xLabels.some((l) => / ms$/.test(l)), xLabels.join('|'));
  const box = await canvasBox();
  await page.mouse.move(box.x + box.w / 2, box.y + box.h / 2);
  const hover = await page.$eval('#hover', (e) => e.textContent);
  // forward-fp32 was recorded on 2026-03-03 (time_us 1772552953882415).
  assert.match(hover, /2026-03-03T\d\d:\d\d:\d\d\.\d+Z/);
  assert.match(hover, / ms\n/);
  await page.click('#axis-toggle');
  // Entry numbers, no time unit.
  await page.waitForFunction(() => {
    const ticks = [...document.querySelectorAll('#x-axis .tick')].map((t) => t.textContent);
    return ticks.length > 1 && ticks.every((t) => /^[\d,.]+[kM]?$/.test(t));
  });
  assert.equal(await page.$eval('#axis-toggle', (e) => e.textContent), 'x: events');
  const v = await view();
  assert.equal(v[1], 2044, 'the event axis spans the 2,043 entries plus the start');
  await page.mouse.move(box.x + box.w / 2, box.y + box.h / 2 + 1);
  assert.match(await page.$eval('#hover', (e) => e.textContent), /entry #\d+/);
  await page.click('#axis-toggle');
});
