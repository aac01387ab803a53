// Issue 10, points 3–6 in headless Chromium: one colour per call site (in a legend,
// on every rank, "(no call stack)" hatched), the call site named in the detail panel
// (your own code, with the reason), labels that say what they show and stay inside
// the plot, no panning outside the trace, the y axis scaled to allocated bytes, and
// snapshots without a trace. Expected values come from reading the corpus files with
// CPython (tests/fixtures/expected/corpus.jsonl and the ids noted below), never from
// memscope.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { mkdtemp, writeFile, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { serve, browser, screenshot, dropFiles, reference, paintedPixels, fixtures, locate } from './harness.mjs';

const real = (name) => join(fixtures, 'corpus', 'real', name);

let server;
let ref;
let scratch;
before(async () => {
  server = await serve();
  ref = await reference();
  scratch = await mkdtemp(join(tmpdir(), 'memscope-sites-'));
});
after(async () => {
  await server.close();
  await rm(scratch, { recursive: true, force: true });
});

async function loaded(page, file, device = 0) {
  const sel = `.device[data-file="${file}"][data-device="${device}"][data-peak-allocated-bytes]`;
  await page.waitForSelector(sel, { timeout: 60000 });
  return page.$eval(sel, (e) => ({ ...e.dataset }));
}

/** Opens `file` with allocation `id` selected (through a bookmark, so no hit testing is
 * involved) and returns the detail panel's call site, its reason and the marked frame. */
async function siteOf(page, file, id) {
  await page.goto(`${server.url}#v=1&files=${file}&rank=${file}&device=0&sel=${id}`);
  await dropFiles(page, [real(file)]);
  await page.waitForSelector(`#detail-body[data-allocation="${id}"] .call-site-row`, { timeout: 60000 });
  return page.evaluate(() => ({
    site: document.querySelector('.call-site-row .site').textContent,
    hook: document.getElementById('detail-body').dataset.site,
    reason: document.querySelector('.call-site-row .site-reason')?.textContent ?? '',
    frame: document.querySelector('.frame.call-site .frame-name')?.textContent ?? '',
    file: document.querySelector('.frame.call-site .frame-file')?.getAttribute('title') ?? '',
  }));
}

// Allocation ids: the n-th `alloc` entry of device 0 (CPython: pickle.load of the file).
const SITES = [
  // C++ and Python: an einsum (a bmm, allocated in `at::meta::common_checks_baddbmm_bmm`)
  // under the user's forward.
  {
    file: 'fullstep-19k-events-cpp-frames.pickle', id: 2043, shape: 'C++ and Python',
    site: 'forward (transformer.py:22)', frame: 'forward', reason: /your own code/,
  },
  // C++ only: the backward thread's bmm and an exp backward whose output a
  // TensorIterator allocated.
  {
    file: 'fullstep-19k-events-cpp-frames.pickle', id: 5499, shape: 'C++ only',
    site: 'torch::autograd::generated::BmmBackward0::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)',
    frame: 'torch::autograd::generated::BmmBackward0::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)',
    reason: /autograd node/,
  },
  {
    file: 'fullstep-19k-events-cpp-frames.pickle', id: 2083, shape: 'C++ only',
    site: /^torch::autograd::generated::ExpBackward0::apply\(/, reason: /autograd node/,
  },
  // Python only, Windows paths.
  {
    file: 'win-paths-compile-context.pickle', id: 651, shape: 'Python only, Windows paths',
    site: 'cross_entropy (nn_utils.py:17)', frame: 'cross_entropy', reason: /your own code/,
    path: /^D:\\Dev\\assignment2-systems\\cs336-basics\\/,
  },
  // Compiled: Inductor's generated `call` is torch's; the source it came from is named.
  {
    file: 'forward-segment-free.pickle', id: 779, shape: 'compile context',
    site: 'softmax (transformer.py:142)', frame: 'softmax', reason: /your own code/,
  },
];

for (const want of SITES) {
  test(`call site of ${want.shape} (${want.file} #${want.id}) is named with its reason`, async () => {
    const b = await browser();
    try {
      const got = await siteOf(b.page, want.file, want.id);
      if (want.site instanceof RegExp) assert.match(got.site, want.site);
      else assert.equal(got.site, want.site);
      assert.match(got.reason, want.reason);
      assert.equal(got.hook, got.site, 'data-site names the same site');
      if (want.frame) assert.equal(got.frame, want.frame, 'the marked frame is the one named');
      if (want.path) assert.match(got.file, want.path);
      // The legend uses the same rule: no plumbing named as a call site.
      await b.page.waitForSelector('#legend .legend-item');
      const legend = await b.page.$$eval('#legend .legend-label', (l) => l.map((x) => x.textContent));
      for (const label of legend) {
        assert.doesNotMatch(label.split('(')[0], /at::meta::|TensorIterator|CUDACachingAllocator|at::detail::/, label);
      }
      await screenshot(b.page, `sites-${want.file.split('.')[0]}-${want.id}`);
      assert.deepEqual(b.errors, []);
    } finally {
      await b.close();
    }
  });
}

test('the rank card names both reserved figures, each with its value', async () => {
  const b = await browser();
  try {
    const { page } = b;
    await page.goto(server.url);
    // forward-segment-free: 63.9 GB reserved at the peak, 36.2 GB at the snapshot.
    const file = 'forward-segment-free.pickle';
    await dropFiles(page, [real(file)]);
    const got = await loaded(page, file);
    const want = ref.get(`${file}#0`);
    assert.notEqual(want.peak_reserved_bytes, want.reserved_bytes);
    assert.equal(Number(got.peakReservedBytes), want.peak_reserved_bytes);
    assert.equal(Number(got.reservedBytes), want.reserved_bytes);
    const meta = await page.$eval(`.device[data-file="${file}"] .device-meta`, (e) => e.textContent);
    const gib = (b) => `${(b / 2 ** 30).toFixed(1)} GiB`;
    assert.match(meta, new RegExp(`peak ${gib(want.peak_reserved_bytes)}`), meta);
    assert.match(meta, new RegExp(`at the snapshot ${gib(want.reserved_bytes)}`), meta);
    await screenshot(page, 'sites-rank-card-reserved');
  } finally {
    await b.close();
  }
});

/**
 * A hand-made snapshot: one 2 MiB segment holding 4 KiB and 8 KiB allocations, a
 * 16 KiB one at the very end (so the peak is at the right edge) and an OOM as the last
 * entry.
 */
async function edgeSnapshot() {
  const A = 139_800_000_000_000;
  const SEG = 2 * 1024 * 1024;
  const frames = (line) => [{ filename: '/home/me/train.py', line, name: 'step' }];
  const trace = [
    { action: 'segment_alloc', addr: A, size: SEG, stream: 0, time_us: 1_000_000, frames: [] },
    { action: 'alloc', addr: A, size: 4096, stream: 0, time_us: 1_000_100, frames: frames(10) },
    { action: 'alloc', addr: A + 4096, size: 8192, stream: 0, time_us: 1_000_200, frames: frames(11) },
    { action: 'alloc', addr: A + 12288, size: 16384, stream: 0, time_us: 1_004_990, frames: frames(12) },
    { action: 'oom', size: 2 ** 30, device_free: 100 * 2 ** 20, stream: 0, time_us: 1_005_000, frames: frames(13) },
  ];
  const block = (address, size, line) => ({
    address, size, requested_size: size, state: 'active_allocated', frames: frames(line),
  });
  const segments = [{
    device: 0, address: A, total_size: SEG, allocated_size: 28672, active_size: 28672,
    requested_size: 28672, stream: 0, segment_type: 'large', segment_pool_id: [0, 0], is_expandable: false,
    frames: [],
    blocks: [
      block(A, 4096, 10), block(A + 4096, 8192, 11), block(A + 12288, 16384, 12),
      { address: A + 28672, size: SEG - 28672, requested_size: 0, state: 'inactive', frames: [] },
    ],
  }];
  const path = join(scratch, 'edge-oom.json');
  await writeFile(path, JSON.stringify({ segments, device_traces: [trace] }));
  return path;
}

test('labels at the right edge stay inside the plot: peak, moment, last tick, OOM', async () => {
  const b = await browser();
  try {
    const { page } = b;
    await page.goto(server.url);
    await dropFiles(page, [await edgeSnapshot()]);
    await loaded(page, 'edge-oom.json');
    await page.waitForSelector('body[data-status="ready"]');
    await page.waitForSelector('#oom-marks:not([hidden]) .oom-flag');
    await page.waitForSelector('#peak:not([hidden])');
    // The moment at the last entry: a click on the ruler at the right edge.
    const ruler = await page.$eval('#x-axis', (e) => {
      const r = e.getBoundingClientRect();
      return { x: r.right - 1, y: r.top + r.height / 2 };
    });
    await page.mouse.click(ruler.x, ruler.y);
    await page.waitForFunction(() => Number(document.getElementById('moment-line').dataset.moment) >= 4);
    await page.waitForSelector('#moment-line:not([hidden]) .moment-flag');
    const boxes = await page.evaluate(() => {
      const r = (e) => { const b = e.getBoundingClientRect(); return { left: b.left, right: b.right, text: e.textContent }; };
      const ticks = [...document.querySelectorAll('#x-axis .tick')];
      return {
        plot: r(document.getElementById('plot')),
        peak: r(document.getElementById('peak')),
        moment: r(document.querySelector('.moment-flag')),
        tick: r(ticks[ticks.length - 1]),
        oom: r(document.querySelector('.oom-flag')),
        oomSize: r(document.querySelector('.oom-size')),
        mark: r(document.querySelector('.oom-mark')),
        line: r(document.getElementById('moment-line')),
      };
    });
    for (const name of ['peak', 'moment', 'tick', 'oom', 'oomSize']) {
      const box = boxes[name];
      assert.ok(box.right <= boxes.plot.right + 1, `${name} "${box.text}" ends at ${box.right}, the plot at ${boxes.plot.right}`);
      assert.ok(box.left >= boxes.plot.left - 1, `${name} starts left of the plot`);
    }
    assert.equal(boxes.oom.text, 'OOM');
    assert.ok(boxes.line.left > boxes.plot.right - 3, `moment line at ${boxes.line.left}`);
    assert.ok(boxes.moment.right <= boxes.line.left + 1, 'the moment flag hangs left of its line');
    // The OOM is the last entry: its mark at the right edge, its flag left of it.
    assert.ok(boxes.mark.left > boxes.plot.right - 3, `OOM mark at ${boxes.mark.left}`);
    assert.ok(boxes.oom.right <= boxes.mark.left + 1);
    await screenshot(page, 'sites-right-edge-labels');
  } finally {
    await b.close();
  }
});

test('the y axis scales to allocated bytes: 4 KiB under a 2 MiB reservation shows', async () => {
  const b = await browser();
  try {
    const { page } = b;
    await page.goto(server.url);
    await dropFiles(page, [await edgeSnapshot()]);
    await loaded(page, 'edge-oom.json');
    await page.waitForSelector('body[data-status="ready"]');
    const reserved = await page.evaluate(() => window.memscope.stats().view);
    // Fitted to reserved: the 2 MiB segment (× 1.05 headroom).
    assert.ok(Math.abs(reserved[3] - 2 * 2 ** 20 * 1.05) < 1, `${reserved}`);
    const before = await paintedPixels(page);
    await screenshot(page, 'sites-y-reserved');
    await page.click('#y-scale');
    assert.equal(await page.$eval('#plot', (e) => e.dataset.yScale), 'allocated');
    assert.equal(await page.$eval('#y-scale', (e) => e.textContent), 'y: allocated');
    await page.waitForFunction(() => window.memscope.stats().settled);
    const view = await page.evaluate(() => window.memscope.stats().view);
    // Fitted to the peak of allocated bytes: 4 + 8 + 16 KiB.
    assert.ok(Math.abs(view[3] - 28672 * 1.05) < 1e-6, `${view}`);
    assert.deepEqual(view.slice(0, 2), reserved.slice(0, 2), 'x is kept');
    const after = await paintedPixels(page);
    assert.ok(after.painted > before.painted * 20, `${before.painted} → ${after.painted} pixels`);
    await screenshot(page, 'sites-y-allocated');
    await page.click('#y-scale');
    assert.equal(await page.$eval('#plot', (e) => e.dataset.yScale), 'reserved');
  } finally {
    await b.close();
  }
});

test('panning and zooming out never leave the trace', async () => {
  const b = await browser();
  try {
    const { page } = b;
    await page.goto(server.url);
    await dropFiles(page, [real('forward-fp32.pickle')]);
    await loaded(page, 'forward-fp32.pickle');
    await page.waitForSelector('body[data-status="ready"]');
    const view = () => page.evaluate(() => window.memscope.stats().view);
    const [, end] = await view();
    const inside = async (what) => {
      const [x0, x1] = await view();
      assert.ok(x0 >= 0, `${what}: view starts at ${x0}`);
      assert.ok(x1 <= end * (1 + 1e-9), `${what}: view ends at ${x1} past ${end}`);
      assert.ok(x1 > x0, what);
    };
    await page.click('#canvas', { position: { x: 10, y: 10 } });
    for (let i = 0; i < 8; i++) await page.keyboard.press('KeyA');
    await inside('A at fit');
    for (let i = 0; i < 6; i++) await page.keyboard.press('KeyS');
    await inside('S at fit');
    for (let i = 0; i < 4; i++) await page.keyboard.press('KeyW');
    for (let i = 0; i < 30; i++) await page.keyboard.press('KeyA');
    await inside('A zoomed');
    assert.equal((await view())[0], 0, 'panned to the start');
    for (let i = 0; i < 60; i++) await page.keyboard.press('KeyD');
    await inside('D zoomed');
    // Dragging right (towards earlier times) from the start.
    for (let i = 0; i < 60; i++) await page.keyboard.press('KeyA');
    const box = await page.$eval('#canvas', (e) => { const r = e.getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width, h: r.height }; });
    await page.mouse.move(box.x + box.w * 0.3, box.y + box.h / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.w * 0.9, box.y + box.h / 2, { steps: 5 });
    await page.mouse.up();
    await inside('drag');
    // The events axis too.
    await page.click('#axis-toggle');
    const [, events] = await view();
    for (let i = 0; i < 4; i++) await page.keyboard.press('KeyW');
    for (let i = 0; i < 30; i++) await page.keyboard.press('KeyA');
    const [e0] = await view();
    assert.equal(e0, 0);
    for (let i = 0; i < 60; i++) await page.keyboard.press('KeyD');
    const [, e1] = await view();
    assert.ok(e1 <= events, `${e1} past ${events}`);
    await page.waitForFunction(() => window.memscope.stats().settled);
    await screenshot(page, 'sites-pan-end');
  } finally {
    await b.close();
  }
});

test('the legend shows whole rows, and the whole name on hover', async () => {
  const b = await browser();
  try {
    const { page } = b;
    await page.goto(server.url);
    await dropFiles(page, [real('fullstep-19k-events-cpp-frames.pickle')]);
    await loaded(page, 'fullstep-19k-events-cpp-frames.pickle');
    await page.waitForSelector('body[data-status="ready"]');
    await page.waitForSelector('#legend .legend-item');
    const rows = await page.$$eval('#legend .legend-item', (items) => {
      const legend = document.getElementById('legend').getBoundingClientRect();
      return {
        legend: { top: legend.top, bottom: legend.bottom },
        items: items.map((i) => {
          const r = i.getBoundingClientRect();
          return { top: r.top, bottom: r.bottom, title: i.title, label: i.querySelector('.legend-label').textContent };
        }),
      };
    });
    assert.ok(rows.items.length >= 6);
    const tops = [...new Set(rows.items.map((i) => Math.round(i.top)))].sort((a, b) => a - b);
    assert.ok(tops.length >= 3, `${tops.length} rows`);
    for (const item of rows.items) {
      // Every row that starts inside the legend's box is whole.
      if (item.top < rows.legend.bottom) {
        assert.ok(item.bottom <= rows.legend.bottom + 0.5, `"${item.label}" is cut: ${item.bottom} > ${rows.legend.bottom}`);
      }
      assert.ok(item.title.startsWith(item.label + '\n'), `tooltip of ${item.label}: ${item.title}`);
      assert.match(item.title, /bytes in \d[\d,]* allocations at the peak/);
    }
    // Three whole rows are visible (a two-line entry once pushed the third out).
    const whole = rows.items.filter((i) => i.bottom <= rows.legend.bottom + 0.5);
    assert.equal(new Set(whole.map((i) => Math.round(i.top))).size, 3, 'three whole rows');
    for (const item of rows.items) assert.ok(item.bottom - item.top <= 17, `"${item.label}" takes two lines`);
    await page.hover('#legend .legend-item');
    await screenshot(page, 'sites-legend');
  } finally {
    await b.close();
  }
});

for (const [file, device] of [['segments-only.pickle', 0], ['legacy-segment-list.pkl', 1]]) {
  test(`a snapshot without a trace says so and shows its segments and blocks (${file})`, async () => {
    const b = await browser();
    try {
      const { page } = b;
      await page.goto(server.url);
      await dropFiles(page, [real(file)]);
      await loaded(page, file, device);
      const want = ref.get(`${file}#${device}`);
      assert.equal(want.events, 0);
      await page.waitForSelector('#no-trace:not([hidden])');
      const notice = await page.$eval('#no-trace', (e) => e.textContent);
      assert.match(notice, /has no trace/);
      assert.match(notice, new RegExp(`${want.segments.toLocaleString('en-US')} segments`));
      assert.equal(await page.$eval('#plot', (e) => e.hidden), true, 'no empty timeline');
      assert.equal(await page.$eval('#legend', (e) => e.hidden), true);
      // The allocator's state at the snapshot: every segment, and the chosen one's blocks
      // with their call sites.
      await page.waitForSelector('#moment-segments .seg-row', { timeout: 30000 });
      assert.match(await page.$eval('#moment-summary .moment-when', (e) => e.textContent), /The snapshot \(no trace/);
      const live = await page.$eval('#moment-summary', (e) => e.textContent);
      assert.match(live, new RegExp(`${want.segments.toLocaleString('en-US')} segments`));
      // Every block live at the snapshot, with its call site: segments-only.pickle was
      // recorded without frames, legacy-segment-list.pkl with them.
      await page.waitForSelector('#moment-point .site');
      const sites = await page.$$eval('#moment-point .site', (s) => s.map((x) => x.textContent));
      assert.ok(sites.length > 0);
      if (file === 'segments-only.pickle') assert.ok(sites.every((s) => s === '(no call stack)'), sites.join());
      else assert.ok(sites.some((s) => /\(\w+\.py:\d+\)$/.test(s)), sites.join());
      await page.click('#moment-segments .seg-row');
      await page.waitForSelector('#moment-blocks .block-row');
      // The Segments view draws the segments, with no moment along a time it lacks.
      assert.match(await page.$eval('#segments-note', (e) => e.textContent), /segments at the snapshot \(no trace\)/);
      assert.equal(await page.$eval('#segments-moment', (e) => e.hidden), true);
      await screenshot(page, `sites-no-trace-${file.split('.')[0]}`);
      assert.deepEqual(b.errors, []);
    } finally {
      await b.close();
    }
  });
}

/** Two ranks' snapshots (JSON) with the same four call sites, in opposite bytes
 * orders: on its own each rank would give its largest site the first colour. */
function rankWithSites(order) {
  const MiB = 1024 * 1024;
  const sizes = [800, 400, 200, 100];
  const trace = [];
  order.forEach((name, k) => {
    trace.push({
      action: 'alloc', addr: (k + 1) * 2 ** 32, size: sizes[k] * MiB, stream: 0, time_us: 1000 + 10 * k,
      frames: [{ filename: `/home/me/model/${name}.py`, line: 7, name }],
    });
  });
  order.forEach((name, k) => {
    trace.push({ action: 'free_completed', addr: (k + 1) * 2 ** 32, size: sizes[k] * MiB, stream: 0, time_us: 2000 + 10 * k });
  });
  return JSON.stringify({ segments: [], device_traces: [trace] });
}

/** Shows `file`'s rank; returns its legend (label → swatch colour) and, per allocation
 * id in `ids`, the label of its call site (detail panel) and its pixel's colour. */
async function rankColours(page, file, ids) {
  await page.click(`.device[data-file="${file}"]`);
  await page.waitForFunction((f) => document.getElementById('view-title').textContent.startsWith(f), file);
  await page.waitForFunction(() => window.memscope.stats().settled);
  await page.waitForSelector('#legend .legend-item');
  const legend = new Map(await page.$$eval('#legend .legend-item', (items) =>
    items.map((i) => [i.querySelector('.legend-label').textContent, getComputedStyle(i.querySelector('.swatch')).backgroundColor])));
  const drawn = [];
  for (const id of ids) {
    const at = await locate(page, id);
    const colour = await page.evaluate(([x, y]) => {
      const canvas = document.getElementById('canvas');
      const r = canvas.getBoundingClientRect();
      const px = Math.floor(((x - r.left) / r.width) * canvas.width);
      const py = Math.floor(((y - r.top) / r.height) * canvas.height);
      const copy = document.createElement('canvas');
      copy.width = 1;
      copy.height = 1;
      const ctx = copy.getContext('2d');
      ctx.drawImage(canvas, px, py, 1, 1, 0, 0, 1, 1);
      const [red, green, blue] = ctx.getImageData(0, 0, 1, 1).data;
      return `rgb(${red}, ${green}, ${blue})`;
    }, [at.x, at.y]);
    // Its call site, as the detail panel names it (a click selects it).
    await page.mouse.click(at.x, at.y);
    await page.waitForSelector(`#detail-body[data-allocation="${id}"][data-site]`);
    const site = await page.$eval('#detail-body', (e) => e.dataset.site);
    await page.keyboard.press('Escape');
    await page.mouse.move(2, 2);
    drawn.push({ id, site, colour });
  }
  return { legend, drawn };
}

test('a call site keeps its colour on every rank: legends and pixels of two ranks', async () => {
  const dir = await mkdtemp(join(scratch, 'ranks-'));
  await writeFile(join(dir, 'rank0.json'), rankWithSites(['attention', 'mlp', 'embed', 'norm']));
  await writeFile(join(dir, 'rank1.json'), rankWithSites(['norm', 'embed', 'mlp', 'attention']));
  // Real ranks too: the same model at two context lengths.
  await writeFile(join(dir, 'rank2.pickle'), await readFile(real('forward-activations-kept-ctx256.pickle')));
  await writeFile(join(dir, 'rank3.pickle'), await readFile(real('forward-activations-kept-ctx512.pickle')));
  const b = await browser();
  try {
    const { page } = b;
    await page.goto(server.url);
    await dropFiles(page, ['rank0.json', 'rank1.json', 'rank2.pickle', 'rank3.pickle'].map((f) => join(dir, f)));
    await page.waitForFunction(() => document.querySelectorAll('.device[data-peak-allocated-bytes]').length === 4, null, { timeout: 60000 });
    const ids = [0, 1, 2, 3];
    const ranks = [];
    for (const file of ['rank0.json', 'rank1.json']) {
      const got = await rankColours(page, file, ids);
      await screenshot(page, `sites-colour-${file.split('.')[0]}`);
      ranks.push(got);
    }
    const [zero, one] = ranks;
    assert.equal(zero.legend.size, 4);
    // Each band is drawn in its site's legend colour, on both ranks.
    for (const { legend, drawn } of ranks) {
      for (const { id, site, colour } of drawn) {
        assert.equal(colour, legend.get(site), `#${id} (${site}) drawn in ${colour}, legend ${legend.get(site)}`);
      }
    }
    // The same site, the same colour: although the largest site differs.
    assert.notEqual(zero.drawn[0].site, one.drawn[0].site);
    for (const [label, colour] of zero.legend) {
      assert.equal(one.legend.get(label), colour, `${label} on rank 1`);
    }
    assert.equal(new Set(zero.legend.values()).size, 4, 'four sites, four colours');
    // The real pair: every site in both legends in one colour.
    const legends = [];
    for (const file of ['rank2.pickle', 'rank3.pickle']) {
      legends.push((await rankColours(page, file, [])).legend);
      await screenshot(page, `sites-colour-${file.split('.')[0]}`);
    }
    const shared = [...legends[0].keys()].filter((l) => legends[1].has(l));
    assert.ok(shared.length >= 3, `shared sites: ${shared.join(', ')}`);
    for (const label of shared) assert.equal(legends[1].get(label), legends[0].get(label), label);
    assert.deepEqual(b.errors, []);
  } finally {
    await b.close();
  }
});

/** A rank of one allocation per `[name, MiB]`, in that order (ids 0, 1, …), all live
 * at the end. */
function rankWithSizes(sites) {
  const MiB = 1024 * 1024;
  const trace = sites.map(([name, mib], k) => ({
    action: 'alloc', addr: (k + 1) * 2 ** 32, size: mib * MiB, stream: 0, time_us: 1000 + 10 * k,
    frames: [{ filename: `/home/me/model/${name}.py`, line: 7, name }],
  }));
  return JSON.stringify({ segments: [], device_traces: [trace] });
}

test('a call site outside a legend keeps its colour on every rank (pixels of two ranks)', async () => {
  // Fifteen sites on each rank; a legend lists twelve. "swing" is in rank A's legend
  // and below rank B's, "quiet" the other way round; "tail" and "tip" are below both,
  // in opposite bytes orders (a colour given by each rank's own order would differ).
  const common = Array.from({ length: 11 }, (_, k) => [`layer${k}`, 300 - 10 * k]);
  const a = [...common, ['swing', 400], ['quiet', 70], ['tail', 60], ['tip', 55]];
  const bSites = [...common, ['swing', 70], ['quiet', 250], ['tail', 55], ['tip', 60]];
  const dir = await mkdtemp(join(scratch, 'outside-'));
  await writeFile(join(dir, 'rankA.json'), rankWithSizes(a));
  await writeFile(join(dir, 'rankB.json'), rankWithSizes(bSites));
  const b = await browser();
  try {
    const { page } = b;
    await page.goto(server.url);
    await dropFiles(page, ['rankA.json', 'rankB.json'].map((f) => join(dir, f)));
    await page.waitForFunction(() => document.querySelectorAll('.device[data-peak-allocated-bytes]').length === 2, null, { timeout: 60000 });
    const ids = [11, 12, 13, 14]; // swing, quiet, tail, tip on both ranks
    const got = {};
    for (const file of ['rankA.json', 'rankB.json']) {
      got[file] = await rankColours(page, file, ids);
      await screenshot(page, `sites-colour-outside-${file.split('.')[0]}`);
    }
    const A = got['rankA.json'];
    const B = got['rankB.json'];
    const name = (label) => label.split(' ')[0];
    const inLegend = (legend, n) => [...legend.keys()].some((l) => name(l) === n);
    assert.equal(A.legend.size, 12);
    assert.equal(B.legend.size, 12);
    assert.ok(inLegend(A.legend, 'swing') && !inLegend(B.legend, 'swing'));
    assert.ok(inLegend(B.legend, 'quiet') && !inLegend(A.legend, 'quiet'));
    for (const n of ['tail', 'tip']) assert.ok(!inLegend(A.legend, n) && !inLegend(B.legend, n), n);
    for (const [k, n] of ['swing', 'quiet', 'tail', 'tip'].entries()) {
      assert.equal(name(A.drawn[k].site), n);
      assert.equal(name(B.drawn[k].site), n);
      // One site, one colour, listed in this rank's legend or not.
      assert.equal(B.drawn[k].colour, A.drawn[k].colour, `${n}: ${A.drawn[k].colour} on A, ${B.drawn[k].colour} on B`);
    }
    // Listed on one rank, drawn below the other's legend: in the listed colour.
    assert.equal(A.drawn[0].colour, A.legend.get(A.drawn[0].site));
    assert.equal(B.drawn[1].colour, B.legend.get(B.drawn[1].site));
    // Thirteen legend sites in all: each legend's colours are distinct, and the sites no
    // legend lists take colours neither legend uses.
    for (const { legend } of [A, B]) assert.equal(new Set(legend.values()).size, legend.size);
    const listed = new Set([...A.legend.values(), ...B.legend.values()]);
    assert.equal(listed.size, 13);
    for (const k of [2, 3]) assert.ok(!listed.has(A.drawn[k].colour), `${A.drawn[k].site} drawn in legend colour ${A.drawn[k].colour}`);
    assert.deepEqual(b.errors, []);
  } finally {
    await b.close();
  }
});

test('no two call sites of a legend share a colour; "(no call stack)" alone is hatched, on the canvas too', async () => {
  // Every corpus file with a trace. win-paths-compile-context.pickle has 1,066
  // allocations recorded without a stack in its trace (CPython: alloc entries without
  // frames), drawn large enough to find on the canvas.
  const files = [
    'external-annotations.pickle', 'forward-activations-kept-ctx512.pickle', 'forward-fp32.pickle',
    'forward-segment-free.pickle', 'four-devices-no-time-us.pickle', 'fullstep-19k-events-cpp-frames.pickle',
    'win-paths-compile-context.pickle',
  ];
  const b = await browser();
  try {
    const { page } = b;
    for (const file of files) {
      await page.goto(server.url);
      await dropFiles(page, [real(file)]);
      await loaded(page, file);
      await page.waitForSelector('#legend .legend-item');
      await page.waitForFunction(() => window.memscope.stats().settled);
      const items = await page.$$eval('#legend .legend-item', (items) => items.map((i) => {
        const style = getComputedStyle(i.querySelector('.swatch'));
        return { label: i.querySelector('.legend-label').textContent, color: style.backgroundColor, image: style.backgroundImage };
      }));
      const sites = items.filter((i) => i.label !== '(no call stack)');
      assert.ok(sites.length >= 3, `${file}: ${items.length} legend rows`);
      for (const i of sites) assert.equal(i.image, 'none', `${file}: ${i.label} is plain`);
      const colours = sites.map((i) => i.color);
      assert.equal(new Set(colours).size, colours.length, `${file}: ${JSON.stringify(sites)}`);
      // Allocations made before the trace (from the segments' blocks) can have no stack
      // either: wherever "(no call stack)" is listed, it is hatched.
      const none = items.find((i) => i.label === '(no call stack)');
      if (none) assert.match(none.image, /repeating-linear-gradient\(-45deg, rgb\(92, 92, 92\)/, file);
      if (file !== 'win-paths-compile-context.pickle') continue;
      assert.ok(none, `${file}: "(no call stack)" in the legend`);
      // On the canvas: its dark grey (92, 92, 92) striped with a lighter one (165).
      const hatched = await page.evaluate(() => {
        const canvas = document.getElementById('canvas');
        const copy = document.createElement('canvas');
        copy.width = canvas.width;
        copy.height = canvas.height;
        const ctx = copy.getContext('2d');
        ctx.drawImage(canvas, 0, 0);
        const data = ctx.getImageData(0, 0, copy.width, copy.height).data;
        const is = (x, y, v) => {
          const i = 4 * (y * copy.width + x);
          return Math.abs(data[i] - v) <= 2 && Math.abs(data[i + 1] - v) <= 2 && Math.abs(data[i + 2] - v) <= 2;
        };
        const found = [];
        for (let y = 2; y < copy.height - 2; y++) {
          for (let x = 2; x < copy.width - 8; x++) {
            // Dark above, below and beside, a light stripe within the next few pixels.
            if (is(x, y, 92) && is(x, y - 1, 92) && is(x, y + 1, 92) && [1, 2, 3, 4, 5].some((d) => is(x + d, y, 165))) found.push([x, y]);
          }
        }
        const r = canvas.getBoundingClientRect();
        return found.map(([x, y]) => [r.left + ((x + 0.5) / copy.width) * r.width, r.top + ((y + 0.5) / copy.height) * r.height]);
      });
      assert.ok(hatched.length > 20, `${hatched.length} hatched pixels`);
      // What is drawn there has no call stack: the hover says so (an aggregate) or the
      // detail panel does (a band).
      for (const [x, y] of [hatched[0], hatched[Math.floor(hatched.length / 2)], hatched[hatched.length - 1]]) {
        await page.mouse.move(x, y);
        const hover = await page.$eval('#hover', (e) => ({ ...e.dataset, text: e.textContent }));
        if (hover.hit === 'aggregate') {
          assert.equal(hover.aggregateSite, '(no call stack)', hover.text);
        } else {
          assert.equal(hover.hit, 'allocation');
          await page.mouse.down();
          await page.mouse.up();
          await page.waitForSelector(`#detail-body[data-allocation="${hover.allocation}"][data-site]`);
          assert.equal(await page.$eval('#detail-body', (e) => e.dataset.site), '(no call stack)');
          await page.keyboard.press('Escape');
        }
      }
      await page.mouse.move(2, 2);
      await screenshot(page, 'sites-no-call-stack-hatched');
    }
    assert.deepEqual(b.errors, []);
  } finally {
    await b.close();
  }
});
