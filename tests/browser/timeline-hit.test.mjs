// The memory timeline tells the truth at every zoom, in headless Chromium: random
// W/S/A/D, Ctrl+wheel and Alt+box-zoom sequences (both axes, two pixel ratios, several
// window sizes) on several corpus files, then hovers and clicks on random drawn pixels
// (all of a round's in one round trip to the page), checked through the DOM hooks (#plot's view, #hover's answer, the detail panel's
// allocation) and against the pixels themselves:
// - a band clicked is live in the clicked column (its alloc and free entries, or times,
//   bracket the column), the hover named the same allocation, and the clicked pixel is
//   the one that lightens when it is selected (so the band selected is the band drawn
//   there, at that byte height);
// - an aggregate hovered says what it holds, is grey only if it mixes call sites, names
//   the call site whose colour is drawn under the cursor (inside an area of one
//   colour), comes from a window of the stack around the cursor, and a click on it
//   zooms to that window.
// A band that slides down the stack is outlined along the band when selected, and the
// full training step at Fit is at least 90 % coloured by call site.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { serve, browser, screenshot, dropFiles, fixtures, locate, artifacts } from './harness.mjs';

const real = (name) => join(fixtures, 'corpus', 'real', name);

let server;
before(async () => {
  server = await serve();
});
after(async () => server.close());

/** xorshift32: a fixed seed per file, so a failure reproduces. */
function rng(seed) {
  let s = seed >>> 0 || 1;
  const next = () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 4294967296;
  };
  return { unit: next, below: (n) => Math.floor(next() * n), range: (a, b) => a + (b - a) * next() };
}

const GREY = [154, 154, 154];
const BACKGROUND = [255, 255, 255];
// Overlays (allocated outline, reserved, peak) and the selection outline, light theme.
const OVERLAYS = [[0x20, 0x20, 0x20], [0x6a, 0x3d, 0x9a], [0xb0, 0x00, 0x20], [0, 0, 0]];
const near = (a, b, d = 3) => Math.abs(a[0] - b[0]) <= d && Math.abs(a[1] - b[1]) <= d && Math.abs(a[2] - b[2]) <= d;

/** Waits until the strips drawn are the current view's own; returns the canvas size,
 * its client rect and the view published on #plot. */
async function settled(page) {
  await page.waitForFunction(() => window.memscope.stats().settled, null, { timeout: 30000 });
  return page.evaluate(() => {
    const canvas = document.getElementById('canvas');
    const r = canvas.getBoundingClientRect();
    const plot = document.getElementById('plot').dataset;
    return {
      w: canvas.width,
      h: canvas.height,
      rect: { left: r.left, top: r.top, width: r.width, height: r.height },
      view: {
        axis: plot.axis,
        x0: Number(plot.viewStart),
        x1: Number(plot.viewEnd),
        y0: Number(plot.yMinBytes),
        y1: Number(plot.yMaxBytes),
      },
    };
  });
}

/** The colours of canvas pixels `[[x, y], …]` now. */
async function pixels(page, list) {
  return page.evaluate((list) => {
    const canvas = document.getElementById('canvas');
    const copy = document.createElement('canvas');
    copy.width = canvas.width;
    copy.height = canvas.height;
    const ctx = copy.getContext('2d');
    ctx.drawImage(canvas, 0, 0);
    const data = ctx.getImageData(0, 0, copy.width, copy.height).data;
    return list.map(([x, y]) => [data[4 * (y * copy.width + x)], data[4 * (y * copy.width + x) + 1], data[4 * (y * copy.width + x) + 2]]);
  }, list);
}

/** Whether the canvas itself is under each client point (not a label over it). */
async function onCanvas(page, points) {
  return page.evaluate((points) => points.map(([x, y]) => document.elementFromPoint(x, y)?.id === 'canvas'), points);
}

/**
 * Waits for the detail panel to show allocation `id`; returns its data attributes and
 * the colours of the canvas pixels `[[x, y], …]` then (copied a few pixels at a time).
 */
async function selected(page, id, list) {
  const handle = await page.waitForFunction(
    ([id, list]) => {
      const panel = document.getElementById('detail-body');
      if (panel.dataset.allocation !== id || panel.dataset.site === undefined) return null;
      const canvas = document.getElementById('canvas');
      const copy = document.createElement('canvas');
      copy.width = 1;
      copy.height = 1;
      const ctx = copy.getContext('2d');
      const colours = list.map(([x, y]) => {
        ctx.clearRect(0, 0, 1, 1);
        ctx.drawImage(canvas, x, y, 1, 1, 0, 0, 1, 1);
        return [...ctx.getImageData(0, 0, 1, 1).data.slice(0, 3)];
      });
      return { data: { ...panel.dataset }, colours };
    },
    [id, list],
    { timeout: 10000 },
  );
  return handle.jsonValue();
}

/** Counts of the canvas's pixels: drawn (not background, not an overlay line) and grey. */
async function greyShare(page, background, overlays, grey) {
  return page.evaluate(([background, overlays, grey]) => {
    const canvas = document.getElementById('canvas');
    const copy = document.createElement('canvas');
    copy.width = canvas.width;
    copy.height = canvas.height;
    const ctx = copy.getContext('2d');
    ctx.drawImage(canvas, 0, 0);
    const data = ctx.getImageData(0, 0, copy.width, copy.height).data;
    const near = (i, c, d) => Math.abs(data[i] - c[0]) <= d && Math.abs(data[i + 1] - c[1]) <= d && Math.abs(data[i + 2] - c[2]) <= d;
    let drawn = 0;
    let greys = 0;
    for (let i = 0; i < data.length; i += 4) {
      if (near(i, background, 6) || overlays.some((o) => near(i, o, 10))) continue;
      drawn++;
      if (near(i, grey, 2)) greys++;
    }
    return { drawn, grey: greys, total: copy.width * copy.height };
  }, [background, overlays, grey]);
}

/**
 * Where an integer client point lands: its data coordinates (as the page computes
 * them), the canvas column and the canvas rows that may show it (two when the point
 * sits on the boundary between rows).
 */
function place(shot, cx, cy) {
  const { rect, view, w, h } = shot;
  const fx = (cx - rect.left) / rect.width;
  const fy = (cy - rect.top) / rect.height;
  const xx = fx * w;
  const yy = fy * h;
  // On the edge between two columns (a whole client pixel at a whole pixel ratio) the
  // point is the corner of the right one's pixel; rounding must not move it left.
  const column = Math.floor(xx + 1e-9);
  const onEdge = Math.abs(yy - Math.round(yy)) < 1e-6;
  const rows = onEdge ? [Math.round(yy) - 1, Math.round(yy)] : [Math.floor(yy)];
  const dx = (view.x1 - view.x0) / w;
  return {
    x: view.x0 + fx * (view.x1 - view.x0),
    y: view.y0 + (1 - fy) * (view.y1 - view.y0),
    column,
    rows: rows.filter((r) => r >= 0 && r < h),
    c0: view.x0 + column * dx,
    c1: view.x0 + (column + 1) * dx,
  };
}

/** Random navigation: a few keys, a Ctrl+wheel or an Alt+box zoom. */
async function navigate(page, r, box) {
  const steps = 1 + r.below(3);
  for (let k = 0; k < steps; k++) {
    const op = r.below(9);
    if (op < 2) await page.keyboard.press('w');
    else if (op < 3) await page.keyboard.press('s');
    else if (op < 4) await page.keyboard.press('a');
    else if (op < 5) await page.keyboard.press('d');
    else if (op < 7) {
      await page.mouse.move(box.left + r.range(0.1, 0.9) * box.width, box.top + box.height / 2);
      await page.keyboard.down('Control');
      await page.mouse.wheel(0, r.range(-600, 200));
      await page.keyboard.up('Control');
    } else {
      const ax = box.left + r.range(0.05, 0.6) * box.width;
      const ay = box.top + r.range(0.05, 0.6) * box.height;
      await page.keyboard.down('Alt');
      await page.mouse.move(ax, ay);
      await page.mouse.down();
      await page.mouse.move(ax + r.range(0.1, 0.4) * box.width, ay + r.range(0.1, 0.4) * box.height, { steps: 3 });
      await page.mouse.up();
      await page.keyboard.up('Alt');
    }
  }
}

/** Moves the mouse off the canvas, so nothing is hovered. */
async function leave(page) {
  await page.mouse.move(2, 2);
}

const lighten = (c) => c.map((v) => v + (255 - v) * 0.25);

/**
 * Hovers each point `{ cx, cy, column, rows }` in turn (client coordinates, as the
 * mouse would: a mousemove on the canvas), reads what #hover answers, and where it
 * names an allocation clicks there (mousedown, mouseup) and waits for the detail panel
 * to show it and for the next frame to be drawn, then reads the canvas pixels of the
 * point's rows. All inside the page,
 * in one round trip: the page's own handlers get the same events a mouse gives.
 * Returns per point `{ hover, data, colours, timeout }`.
 */
async function probe(page, points) {
  return page.evaluate(async (points) => {
    const canvas = document.getElementById('canvas');
    const readout = document.getElementById('hover');
    const panel = document.getElementById('detail-body');
    // One pixel straight from the drawing buffer (kept: preserveDrawingBuffer); a copy
    // of the canvas through a 2D context reads the whole buffer back each time.
    const gl = canvas.getContext('webgl2');
    const one = new Uint8Array(4);
    const pixel = (x, y) => {
      gl.readPixels(x, canvas.height - 1 - y, 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, one);
      return [one[0], one[1], one[2]];
    };
    const fire = (type, { cx, cy }) =>
      canvas.dispatchEvent(new MouseEvent(type, { clientX: cx, clientY: cy, button: 0, bubbles: true, cancelable: true }));
    const out = [];
    for (const point of points) {
      fire('mousemove', point);
      const hover = { ...readout.dataset, text: readout.textContent };
      const answer = { hover };
      if (hover.hit === 'allocation') {
        fire('mousedown', point);
        fire('mouseup', point);
        const start = performance.now();
        while (panel.dataset.allocation !== hover.allocation || panel.dataset.site === undefined) {
          if (performance.now() - start > 10000) {
            answer.timeout = true;
            break;
          }
          await new Promise((resolve) => setTimeout(resolve, 0));
        }
        answer.data = { ...panel.dataset };
        // The page draws once per animation frame: the selection is drawn in the next
        // frame, after the frame callbacks already queued (ours runs after its draw).
        await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
        answer.colours = point.rows.map((row) => pixel(point.column, row));
      }
      out.push(answer);
    }
    return out;
  }, points);
}

/**
 * Loads `file`, then runs `rounds` of random navigation, each followed by clicks and
 * hovers on random drawn pixels. Returns counts of what was checked.
 */
async function explore(file, { seed, points: target, pointsPerRound, ratio = 1, size, events = false }) {
  const b = await browser([], { deviceScaleFactor: ratio });
  const tally = { clicks: 0, bands: 0, lightened: 0, outlined: 0, aggregates: 0, mixed: 0, uniform: 0, majority: 0, zooms: 0 };
  try {
    const { page, errors } = b;
    if (size) await page.setViewportSize(size);
    await page.goto(server.url);
    await dropFiles(page, [real(file)]);
    await page.waitForSelector('body[data-status="ready"]', { timeout: 60000 });
    if (events) {
      await page.click('#axis-toggle');
      await page.waitForSelector('#plot[data-axis="events"]');
    }
    const r = rng(seed);
    const box = await page.$eval('#canvas', (c) => {
      const q = c.getBoundingClientRect();
      return { left: q.left, top: q.top, width: q.width, height: q.height };
    });
    // Rounds until `target` points are checked. Random navigation can leave nothing
    // drawn in view (a box zoom above the stack): the round after such a one starts
    // from Fit.
    let sparse = false;
    for (let round = 0; tally.clicks + tally.aggregates < target; round++) {
      assert.ok(round < 40, `${file}: ${JSON.stringify(tally)} after 40 rounds`);
      if (sparse) await page.keyboard.press('f');
      if (round > 0) await navigate(page, r, box);
      await page.keyboard.press('Escape');
      await leave(page);
      const shot = await settled(page);
      // Random integer client points on drawn pixels (not the background or overlays).
      const candidates = [];
      for (let k = 0; k < 6 * pointsPerRound; k++) {
        const cx = Math.floor(shot.rect.left + 1 + r.unit() * (shot.rect.width - 2));
        const cy = Math.floor(shot.rect.top + 1 + r.unit() * (shot.rect.height - 2));
        const p = place(shot, cx, cy);
        if (p.rows.length > 0) candidates.push({ cx, cy, p });
      }
      // Each candidate's rows, and the rows above and below them (whether the point is
      // inside an area of one colour).
      const around = ({ p }) => [p.rows[0] - 1, ...p.rows, p.rows[p.rows.length - 1] + 1].map((row) => [p.column, Math.min(Math.max(row, 0), shot.h - 1)]);
      const seen = await pixels(page, candidates.flatMap(around));
      const uncovered = await onCanvas(page, candidates.map(({ cx, cy }) => [cx, cy]));
      const points = [];
      let next = 0;
      candidates.forEach((c, k) => {
        const column = seen.slice(next, next + c.p.rows.length + 2);
        next += c.p.rows.length + 2;
        const colours = column.slice(1, -1);
        // Labels over the canvas (the peak, ticks) take the mouse there.
        if (points.length >= pointsPerRound || !uncovered[k]) return;
        if (colours.some((x) => near(x, BACKGROUND, 6) || OVERLAYS.some((o) => near(x, o, 10)))) return;
        points.push({ ...c, colours, uniform: column.every((x) => near(x, column[0], 1)) });
      });
      sparse = points.length < pointsPerRound / 2;
      // Every point's hover and click in one round trip (see `probe`).
      const answers = await probe(page, points.map(({ cx, cy, p }) => ({ cx, cy, column: p.column, rows: p.rows })));
      const aggregatesHovered = [];
      points.forEach(({ cx, cy, p, colours, uniform }, k) => {
        const { hover, data: d, colours: now, timeout } = answers[k];
        const where = `${file} round ${round} at (${cx}, ${cy}) = x ${p.x}, ${p.y} bytes, view ${JSON.stringify(shot.view)}`;
        assert.ok(hover.hit === 'allocation' || hover.hit === 'aggregate', `${where}: nothing answered on a drawn pixel`);
        if (hover.hit === 'aggregate') {
          tally.aggregates++;
          const n = Number(hover.aggregateAllocations);
          assert.ok(n >= 1 && Number(hover.aggregateBytes) > 0, `${where}: ${hover.text}`);
          assert.match(hover.text, /allocations? too thin to draw one by one/);
          const grey = colours.every((c) => near(c, GREY, 2));
          const mixed = /call sites mixed/.test(hover.text);
          if (mixed) tally.mixed++;
          // Grey only where sites mix (when the point is inside one pixel row).
          if (p.rows.length === 1 && grey) assert.ok(mixed, `${where}: grey but ${hover.text}`);
          // Inside an area of one colour (no edge of a rect near the point), the hover
          // names the site whose colour is drawn there, or says the sites are mixed
          // where it is grey.
          if (uniform) {
            tally.uniform++;
            if (grey) {
              assert.equal(hover.aggregateSite, undefined, `${where}: grey, but ${hover.text}`);
            } else {
              const site = hover.aggregateSite;
              assert.ok(site, `${where}: drawn in ${colours[0]}, but ${hover.text}`);
              assert.ok(near(colours[0], hover.aggregateColour.split(',').map(Number), 3), `${where}: drawn in ${colours[0]}, ${site} is ${hover.aggregateColour}`);
              assert.ok(hover.text.includes(`call site ${site}`) || hover.text.includes(`drawn as ${site} (most of its bytes)`), `${where}: ${hover.text}`);
              if (!hover.text.includes(`call site ${site}`)) tally.majority++;
            }
          }
          // What it holds comes from its window of the stack, around the point.
          const [w0, w1] = hover.aggregateWindow.split(' ').map(Number);
          const bpp = (shot.view.y1 - shot.view.y0) / shot.h;
          assert.ok(w0 - 2 * bpp <= p.y && p.y <= w1 + 2 * bpp, `${where}: window ${w0}..${w1}`);
          aggregatesHovered.push({ cx, cy, p, where, window: [w0, w1] });
          return;
        }
        // A band: it was clicked.
        const id = hover.allocation;
        tally.clicks++;
        assert.ok(!timeout, `${where}: the detail panel never showed #${id}`);
        assert.equal(d.allocation, id, `${where}: clicked #${id}, the panel shows #${d.allocation}`);
        tally.bands++;
        // Live in the clicked column.
        if (shot.view.axis === 'time') {
          if (d.allocUs !== '') assert.ok(Number(d.allocUs) <= p.c1 + 1e-6, `${where}: #${id} allocated at ${d.allocUs} µs`);
          if (d.freeUs !== '') assert.ok(Number(d.freeUs) >= p.c0 - 1e-6, `${where}: #${id} freed at ${d.freeUs} µs`);
        } else {
          // Moment m (after m entries) spans [m, m + 1): live at alloc entry + 1 ≤ m
          // < free entry + 1, for some m the column covers.
          if (d.allocEntry !== '') assert.ok(Number(d.allocEntry) + 1 < p.c1, `${where}: #${id} allocated at entry ${d.allocEntry}`);
          if (d.freeEntry !== '') assert.ok(Number(d.freeEntry) + 1 > Math.floor(p.c0), `${where}: #${id} freed at entry ${d.freeEntry}`);
        }
        assert.ok(Number(d.bytes) > 0, `${where}: #${id} has ${d.bytes} bytes`);
        // The pixel clicked is the selected band's: it lightens (or carries the
        // selection's outline).
        let ok = false;
        for (let k = 0; k < p.rows.length && !ok; k++) {
          const after = now[k];
          if (near(after, lighten(colours[k]), 4)) {
            tally.lightened++;
            ok = true;
          } else if (near(after, [0, 0, 0], 10)) {
            tally.outlined++;
            ok = true;
          }
        }
        assert.ok(ok, `${where}: the pixel under #${id} did not change as a selection (was ${JSON.stringify(colours)})`);
      });
      // Now and then a click (with the mouse) on an aggregate zooms to it.
      if (aggregatesHovered.length > 0 && r.below(3) === 0) {
        const { cx, cy, p, where, window } = aggregatesHovered[r.below(aggregatesHovered.length)];
        await page.keyboard.press('Escape');
        await page.mouse.move(cx, cy);
        assert.equal(await page.$eval('#hover', (e) => e.dataset.hit), 'aggregate', `${where}: hovered again`);
        await page.mouse.down();
        await page.mouse.up();
        await page.waitForFunction(() => window.memscope.stats().settled);
        const v = await page.$eval('#plot', (e) => ({ ...e.dataset }));
        const [x0, x1, y0, y1] = [v.viewStart, v.viewEnd, v.yMinBytes, v.yMaxBytes].map(Number);
        const dx = (shot.view.x1 - shot.view.x0) / shot.w;
        assert.ok(x0 <= p.x + dx && p.x - dx <= x1, `${where}: zoomed to ${x0}..${x1}`);
        const bpp = (shot.view.y1 - shot.view.y0) / shot.h;
        assert.ok(y0 <= p.y + bpp && p.y - 2 * bpp <= y1, `${where}: zoomed to ${y0}..${y1} bytes`);
        // To its window of the stack, where what it holds is (its columns may already
        // span the view).
        assert.ok(y0 <= window[0] && window[1] <= y1, `${where}: zoomed to ${y0}..${y1} bytes, window ${window}`);
        assert.ok(y1 - y0 < shot.view.y1 - shot.view.y0, `${where}: zoomed in`);
        tally.zooms++;
      }
    }
    assert.deepEqual(errors, []);
    return tally;
  } finally {
    await b.close();
  }
}

const runs = [
  ['forward-fp32.pickle', { seed: 11, points: 320, pointsPerRound: 24 }],
  ['fullstep-19k-events-cpp-frames.pickle', { seed: 23, points: 320, pointsPerRound: 24, ratio: 2, size: { width: 1100, height: 800 } }],
  ['win-paths-compile-context.pickle', { seed: 37, points: 320, pointsPerRound: 24, events: true, size: { width: 1280, height: 720 } }],
  ['forward-segment-free.pickle', { seed: 41, points: 320, pointsPerRound: 24, ratio: 1.5 }],
];

for (const [file, options] of runs) {
  test(`random zooms and pans on ${file}: every pixel clicked is the allocation or aggregate drawn there`, async () => {
    const tally = await explore(file, options);
    console.log(file, JSON.stringify(tally));
    assert.ok(tally.clicks + tally.aggregates >= 300, `only ${tally.clicks + tally.aggregates} points checked`);
    assert.ok(tally.clicks >= 100, `only ${tally.clicks} bands clicked`);
    // Both outcomes of a selection are met: the pixel lightens, or the band is thin
    // enough there that its outline covers it (most bands of a full step at 2× are).
    assert.ok(tally.lightened >= 0.5 * tally.bands && tally.outlined > 0, JSON.stringify(tally));
  });
}

test('#example: press W twice, the band under the cursor is the allocation selected', async () => {
  // The reported case: at ~6.2 ms / 506 MiB after two W, #178 (allocated at 3.9 ms,
  // freed at 4.4 ms) was answered.
  const b = await browser();
  try {
    const { page } = b;
    await page.goto(server.url + '#example');
    await page.waitForSelector('body[data-status="ready"]', { timeout: 60000 });
    await page.keyboard.press('w');
    await page.keyboard.press('w');
    const shot = await settled(page);
    const { rect, view } = shot;
    const cx = Math.floor(rect.left + ((6200 - view.x0) / (view.x1 - view.x0)) * rect.width);
    let cy = Math.floor(rect.top + (1 - (506 * 1048576 - view.y0) / (view.y1 - view.y0)) * rect.height);
    // The peak's label, or thin allocations drawn as an aggregate, may sit there: the
    // nearest band below on the canvas.
    for (let k = 0; k < 80; k++, cy++) {
      if (!(await onCanvas(page, [[cx, cy]]))[0]) continue;
      await page.mouse.move(cx, cy);
      if ((await page.$eval('#hover', (e) => e.dataset.hit)) === 'allocation') break;
    }
    assert.equal(await page.$eval('#hover', (e) => e.dataset.hit), 'allocation');
    await page.mouse.down();
    await page.mouse.up();
    await page.waitForSelector('#detail-body[data-allocation]');
    const d = await page.$eval('#detail-body', (e) => ({ ...e.dataset }));
    const p = place(shot, cx, cy);
    assert.notEqual(d.allocation, '178');
    assert.ok(Number(d.allocUs) <= p.c1 && (d.freeUs === '' || Number(d.freeUs) >= p.c0), JSON.stringify(d));
    await screenshot(page, 'timeline-hit-example-zoomed-selection');
  } finally {
    await b.close();
  }
});

test('under a still pointer, the readout and the hover follow each new layout (W/S/A/D keys)', async () => {
  // An aggregate's id names an instance of the strips it came in: after a relayout the
  // same id is another aggregate. The oracle is a fresh hover at the same point: after
  // every key and its layout, what the readout says must be what moving the pointer a
  // pixel away and back says.
  const b = await browser();
  try {
    const { page } = b;
    await page.goto(server.url);
    await page.waitForSelector('body[data-status="empty"]');
    await dropFiles(page, [real('fullstep-19k-events-cpp-frames.pickle')]);
    await page.waitForSelector('body[data-status="ready"]', { timeout: 60000 });
    const r = rng(53);
    const readout = () =>
      page.$eval('#hover', (e) => {
        const d = { ...e.dataset };
        return { text: e.textContent, ...d };
      });
    const tally = { aggregates: 0, allocations: 0, empty: 0 };
    for (let trial = 0; trial < 24; trial++) {
      const shot = await settled(page);
      const { rect } = shot;
      // A point on a drawn pixel, the pointer moved there.
      let cx;
      let cy;
      for (let k = 0; k < 50; k++) {
        cx = Math.floor(rect.left + r.range(0.05, 0.95) * rect.width);
        cy = Math.floor(rect.top + r.range(0.3, 0.98) * rect.height);
        if ((await onCanvas(page, [[cx, cy]]))[0]) break;
      }
      await page.mouse.move(cx, cy);
      const key = ['KeyW', 'KeyS', 'KeyA', 'KeyD'][r.below(4)];
      await page.evaluate((code) => document.dispatchEvent(new KeyboardEvent('keydown', { code, key: code.slice(3).toLowerCase(), bubbles: true })), key);
      await settled(page);
      await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => done())));
      const after = await readout();
      await page.mouse.move(cx + 1, cy);
      await page.mouse.move(cx, cy);
      const fresh = await readout();
      assert.deepEqual(after, fresh, `trial ${trial}: ${key} at (${cx}, ${cy})`);
      tally[fresh.hit === 'aggregate' ? 'aggregates' : fresh.hit === 'allocation' ? 'allocations' : 'empty']++;
    }
    console.log('still pointer', JSON.stringify(tally));
    assert.ok(tally.aggregates >= 5, JSON.stringify(tally));
  } finally {
    await b.close();
  }
});

test('a selected band that slides down the stack is outlined along the band, and hit where it is drawn', async () => {
  // win-paths-compile-context.pickle: allocation #643 (312.5 MiB, the 644th alloc entry,
  // CPython) lives from entry 1,393 to the end and slides down the stack by 11.9 GB (85 %
  // of the peak) as the allocations under it are freed.
  const b = await browser([], { deviceScaleFactor: 2 });
  try {
    const { page } = b;
    await page.setViewportSize({ width: 1400, height: 1000 });
    await page.goto(server.url);
    await dropFiles(page, [real('win-paths-compile-context.pickle')]);
    await page.waitForSelector('body[data-status="ready"]', { timeout: 60000 });
    const at = await locate(page, 643);
    await page.mouse.click(at.x, at.y);
    await page.waitForSelector('#detail-body[data-allocation="643"][data-site]');
    const d = await page.$eval('#detail-body', (e) => ({ ...e.dataset }));
    assert.equal(d.freeUs, '', '#643 is live at the end');
    await leave(page);
    const shot = await settled(page);
    const { w, h, rect, view } = shot;
    const first = Math.ceil(((Number(d.allocUs) - view.x0) / (view.x1 - view.x0)) * w) + 2;
    const last = w - 3;
    const height = Number(d.bytes) / ((view.y1 - view.y0) / h);
    assert.ok(last - first > 200 && height > 10, `#643 spans columns ${first}..${last}, ${height} px tall`);
    // Per column, the black rows (the selection's outline in the light theme).
    const black = await page.evaluate(([first, last]) => {
      const canvas = document.getElementById('canvas');
      const copy = document.createElement('canvas');
      copy.width = canvas.width;
      copy.height = canvas.height;
      const ctx = copy.getContext('2d');
      ctx.drawImage(canvas, 0, 0);
      const data = ctx.getImageData(0, 0, copy.width, copy.height).data;
      const out = [];
      for (let x = first; x <= last; x++) {
        const rows = [];
        for (let y = 0; y < copy.height; y++) {
          const i = 4 * (y * copy.width + x);
          if (data[i] <= 10 && data[i + 1] <= 10 && data[i + 2] <= 10) rows.push(y);
        }
        out.push(rows);
      }
      return out;
    }, [first, last]);
    // A column is clean where the outline is a line along the band's top and one along
    // its bottom, a band's height apart, with the band itself between them (not black:
    // no filled parallelogram). Where the band steps down, the outline's vertical edge
    // fills the column from the old top to the new one.
    const tops = [];
    const probes = [];
    let steps = 0;
    black.forEach((rows, k) => {
      const x = first + k;
      assert.ok(rows.length >= 2, `column ${x}: no outline`);
      const top = rows[0];
      const bottom = rows[rows.length - 1];
      const inside = rows.filter((y) => y > top + 2 && y < bottom - 2).length;
      if (Math.abs(bottom - top - height) <= 2.5 && inside === 0) {
        tops.push(top);
        if (tops.length % 40 === 1) probes.push({ x, y: (top + bottom) / 2 });
      } else {
        steps++;
        assert.ok(bottom - top > height + 2.5, `column ${x}: black over ${top}..${bottom} inside a band ${height} px tall`);
      }
    });
    assert.ok(tops.length >= 0.8 * black.length, `${steps} of ${black.length} columns are not a clean outline`);
    // It does slide: the outline steps down by many pixels along the band.
    const slide = Math.max(...tops) - Math.min(...tops);
    assert.ok(slide >= 0.5 * h, `the outline's top moves by ${slide} px`);
    // And the band is hit where its outline says it is drawn.
    for (const { x, y } of probes) {
      await page.mouse.move(rect.left + ((x + 0.5) / w) * rect.width, rect.top + ((y + 0.5) / h) * rect.height);
      assert.equal(await page.$eval('#hover', (e) => e.dataset.allocation), '643', `column ${x}, row ${y}`);
    }
    console.log(`#643: ${black.length} columns, ${steps} steps, top from row ${Math.min(...tops)} to ${Math.max(...tops)}, ${probes.length} hovers`);
    await leave(page);
    await screenshot(page, 'timeline-selection-slides');
    // The right half of the plot, where the band steps down the stack, up close.
    await page.screenshot({
      path: join(artifacts, 'timeline-selection-slides-detail.png'),
      clip: { x: rect.left + rect.width / 2, y: rect.top, width: rect.width / 2, height: rect.height },
    });
    assert.deepEqual(b.errors, []);
  } finally {
    await b.close();
  }
});

test('the full training step at Fit is at least 90 % coloured by call site; screenshots', async () => {
  const b = await browser();
  try {
    const { page } = b;
    await page.goto(server.url);
    await dropFiles(page, [real('fullstep-19k-events-cpp-frames.pickle')]);
    await page.waitForSelector('body[data-status="ready"]', { timeout: 60000 });
    await leave(page);
    const shot = await settled(page);
    const { drawn, grey } = await greyShare(page, BACKGROUND, OVERLAYS, GREY);
    const coloured = (drawn - grey) / drawn;
    console.log(`fullstep at Fit: ${drawn} drawn pixels, ${grey} grey: ${(100 * coloured).toFixed(1)} % coloured`);
    assert.ok(drawn > 0.2 * shot.w * shot.h, `${drawn} drawn pixels`);
    assert.ok(coloured >= 0.9, `${(100 * coloured).toFixed(1)} % coloured`);
    await screenshot(page, 'timeline-fullstep-fit');
    // Hover on an aggregate says what it holds.
    const r = rng(5);
    let said = '';
    for (let k = 0; k < 200 && !said; k++) {
      const cx = Math.floor(shot.rect.left + r.range(0.05, 0.95) * shot.rect.width);
      const cy = Math.floor(shot.rect.top + r.range(0.3, 0.95) * shot.rect.height);
      if (!(await onCanvas(page, [[cx, cy]]))[0]) continue;
      await page.mouse.move(cx, cy);
      const hover = await page.$eval('#hover', (e) => ({ ...e.dataset, text: e.textContent }));
      if (hover.hit === 'aggregate') said = hover.text;
    }
    assert.match(said, /allocations? too thin to draw one by one: .*\n(call site |\d+ call sites mixed|\d+ call sites, drawn as )/);
    assert.match(said, /click to zoom in/);
    await screenshot(page, 'timeline-aggregate-hover');
    await leave(page);
    // Zoomed: four W, a box in the middle of the stack.
    for (let k = 0; k < 4; k++) await page.keyboard.press('w');
    await settled(page);
    await screenshot(page, 'timeline-fullstep-zoomed');
    // A selected band that slides down the stack is outlined along the band.
    const box = shot.rect;
    for (let k = 0; k < 30; k++) {
      await page.mouse.click(Math.floor(box.left + box.width * (0.3 + k / 100)), Math.floor(box.top + box.height * 0.7));
      const id = await page.$eval('#detail-body', (e) => e.dataset.allocation || '');
      if (id) break;
    }
    await settled(page);
    await screenshot(page, 'timeline-fullstep-selection');
  } finally {
    await b.close();
  }
});
