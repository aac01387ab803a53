// The linked lenses (issue 4) in headless Chromium: the segment timeline, the allocator
// state at a moment (and stepping it), the flame graph, the call-site lanes, the top
// allocations table, search, range and point, private pools, settings and OOMs, and one
// selection shared by all of them.
//
// Expected numbers come from an independent source: CPython's pickle loads the fixture
// and the small replay below (REFERENCE) follows docs/semantics.md — never from
// memscope — or from tests/fixtures/expected/corpus.jsonl, or from the values the
// fixtures were generated with (tests/crafted/generate.py, the pool oracles of the issue).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, writeFile, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve, browser, screenshot, dropFiles, reference, fixtures, locate } from './harness.mjs';

const FP32 = join(fixtures, 'corpus', 'real', 'forward-fp32.pickle');
const CRAFTED = join(fixtures, 'crafted', 'snap.json');

// A replay of one device's trace in CPython: allocations with their moments (moment
// k + 1 is the state after entry k; allocations made before the window live from 0),
// sizes, addresses, frames; and the segments' free runs at the snapshot.
const REFERENCE = String.raw`
import gzip, json, pickle, sys
path, dev = sys.argv[1], int(sys.argv[2])
raw = open(path, 'rb').read()
if raw[:2] == b'\x1f\x8b':
    raw = gzip.decompress(raw)
snap = json.loads(raw) if raw.lstrip()[:1] in (b'{', b'[') else pickle.loads(raw)
traces = snap.get('device_traces', [])
trace = traces[dev] if dev < len(traces) else []
n = len(trace)
t0 = next((e['time_us'] for e in trace if e.get('time_us') is not None), None)
def ftext(frames):
    return '\n'.join(('%s %s' % (f.get('filename', ''), f.get('name', ''))).lower() for f in (frames or []))
allocs, live, pending_before, before = [], {}, {}, []
for k, e in enumerate(trace):
    a, m = e['action'], k + 1
    if a == 'alloc':
        if e['addr'] in live:
            allocs[live[e['addr']]]['end'] = m
        live[e['addr']] = len(allocs)
        allocs.append(dict(start=m, pending=None, end=n + 1, size=e['size'], addr=e['addr'],
                           frames=ftext(e.get('frames')), nostack=not e.get('frames')))
    elif a == 'free_requested':
        i = live.get(e['addr'])
        if i is None:
            pending_before[e['addr']] = m
        else:
            allocs[i]['pending'] = m
    elif a in ('free_completed', 'free'):
        i = live.pop(e['addr'], None)
        if i is None:
            before.append(dict(start=0, pending=pending_before.pop(e['addr'], None), end=m, size=e['size'],
                               addr=e['addr'], frames=ftext(e.get('frames')), nostack=not e.get('frames')))
        else:
            allocs[i]['end'] = m
segs = sorted([s for s in snap.get('segments', []) if s.get('device', 0) == dev],
              key=lambda s: (s.get('stream', 0), s['address']))
active = ('active_allocated', 'active_pending_free')
held = set(live)
gaps = []
for s in segs:
    run = 0
    for b in sorted(s['blocks'], key=lambda b: b['address']):
        if b['state'] in active:
            if b['address'] not in held:
                size = b['requested_size'] if 'requested_size' in b else b['size']
                before.append(dict(start=0, pending=None, end=n + 1, size=size, addr=b['address'],
                                   frames=ftext(b.get('frames')), nostack=not b.get('frames')))
            if run:
                gaps.append(run)
            run = 0
        else:
            run += b['size']
    if run:
        gaps.append(run)
reserved = sum(s['total_size'] for s in segs)
print(json.dumps(dict(
    events=n,
    actions=[e['action'] for e in trace],
    times=[(e['time_us'] - t0) if (t0 is not None and e.get('time_us') is not None) else None for e in trace],
    traced=len(allocs),
    allocs=allocs + before,
    segments=[dict(address=s['address'], total_size=s['total_size']) for s in segs],
    end=dict(reserved=reserved, free=sum(gaps), largest=max(gaps, default=0),
             sumsq=sum(g * g for g in gaps), segments=len(segs)),
)))
`;

function replay(path, device = 0) {
  const out = execFileSync('python3', ['-c', REFERENCE, path, String(device)], {
    maxBuffer: 1 << 28,
  });
  const ref = JSON.parse(out);
  ref.liveAt = (m) => ref.allocs.filter((a) => a.start <= m && m < a.end);
  ref.liveBytes = (m) => ref.liveAt(m).reduce((s, a) => s + a.size, 0);
  return ref;
}

let server;
let corpus;
let fp32;
before(async () => {
  server = await serve();
  corpus = await reference();
  fp32 = replay(FP32);
});
after(async () => server.close());

/** Opens `files` in a fresh browser and waits for the lenses' first state. */
async function open(files) {
  const b = await browser();
  const { page } = b;
  await page.goto(server.url);
  await page.waitForSelector('body[data-status="empty"]');
  await dropFiles(page, files);
  await page.waitForSelector('body[data-status="ready"]', { timeout: 30000 });
  await page.waitForFunction(() => window.memscope.lenses && window.memscope.lenses().moment !== null, null, { timeout: 30000 });
  return b;
}

const lens = (page) => page.evaluate(() => window.memscope.lenses());
const waitMoment = (page, m) => page.waitForFunction((m) => window.memscope.lenses().moment === m, m);
const view = (page) => page.evaluate(() => window.memscope.stats().view);

async function tab(page, name) {
  await page.click(`#tab-${name}`);
  await page.waitForFunction((n) => window.memscope.lenses().tab === n, name);
}

/** Waits until the rows view `which` was laid out for the timeline's current x range. */
async function laidOut(page, which) {
  await page.waitForFunction((w) => {
    const el = document.getElementById(`${w}-scroll`);
    const v = window.memscope.stats().view;
    return el.dataset.x0 !== undefined && Math.abs(Number(el.dataset.x0) - v[0]) < 1e-6 * (1 + Math.abs(v[0]))
      && Math.abs(Number(el.dataset.x1) - v[1]) < 1e-6 * (1 + Math.abs(v[1]));
  }, which);
}

/** The row (index among segments ordered by address) holding address `addr`. */
function segmentRow(ref, addr) {
  return ref.segments.findIndex((s) => s.address <= addr && addr < s.address + s.total_size);
}

test('the state at a moment matches a replay of the trace; the event list, ←/→ and the ruler move the moment', async () => {
  const b = await open([FP32]);
  const { page, errors } = b;
  try {
    const want = corpus.get('forward-fp32.pickle#0');
    // The moment starts at the peak.
    let peakMoment = 0;
    for (let m = 0; m <= fp32.events; m++) if (fp32.liveBytes(m) > fp32.liveBytes(peakMoment)) peakMoment = m;
    let l = await lens(page);
    assert.equal(l.moment, peakMoment);
    assert.equal(l.totals.allocated_bytes, want.peak_allocated_bytes);
    assert.equal(l.totals.allocated_bytes, fp32.liveBytes(peakMoment));
    assert.equal(l.pointRows, fp32.liveAt(peakMoment).length, 'every live allocation is listed at the point');
    // The panel shows it with units.
    const shown = await page.$eval('#moment-summary dd[data-key="allocated_bytes"]', (e) => [e.textContent, e.title]);
    assert.equal(shown[0], '531 MiB');
    assert.equal(shown[1], '556,843,008 bytes');

    // The event list opens on the moment's entry.
    await tab(page, 'events');
    await page.waitForSelector(`#events-list .grid-row.current[data-index="${peakMoment - 1}"]`);
    // End of the event list: the state at the snapshot.
    await page.focus('#events-grid');
    await page.keyboard.press('End');
    await waitMoment(page, fp32.events);
    l = await lens(page);
    const end = fp32.end;
    assert.equal(l.totals.allocated_bytes, want.requested_bytes);
    assert.equal(l.totals.reserved_bytes, want.reserved_bytes);
    assert.equal(l.totals.segments, want.segments);
    assert.equal(l.totals.free_bytes, end.free);
    assert.equal(l.totals.largest_free_bytes, end.largest);
    assert.ok(Math.abs(l.totals.fragmentation - (1 - end.largest / end.free)) < 1e-12);
    assert.ok(Math.abs(l.totals.pytorch_fragmentation - end.sumsq / (end.reserved * end.reserved)) < 1e-12);
    // Step back entry by entry: the current row follows, its action is the trace's.
    for (let i = 0; i < 3; i++) await page.keyboard.press('ArrowUp');
    await waitMoment(page, fp32.events - 3);
    await page.waitForSelector(`#events-list .grid-row.current[data-index="${fp32.events - 4}"]`);
    const action = await page.$eval('#events-list .grid-row.current', (r) => r.dataset.action);
    assert.equal(action, fp32.actions[fp32.events - 4]);
    assert.equal((await lens(page)).totals.allocated_bytes, fp32.liveBytes(fp32.events - 3));
    // A click on a row of the list: that entry's moment.
    await page.keyboard.press('Home');
    await waitMoment(page, 0);
    await page.click('#events-list .grid-row[data-index="3"]');
    await waitMoment(page, 4);
    assert.equal((await lens(page)).totals.allocated_bytes, fp32.liveBytes(4));
    // ← / → anywhere step it too.
    await page.click('#moment-summary');
    await page.keyboard.press('ArrowRight');
    await waitMoment(page, 5);
    await page.keyboard.press('ArrowLeft');
    await page.keyboard.press('ArrowLeft');
    await waitMoment(page, 3);
    // A click on the ruler under the memory timeline sets the moment there.
    const ruler = await page.$eval('#x-axis', (e) => { const r = e.getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width, h: r.height }; });
    await page.mouse.click(ruler.x + ruler.w * 0.4, ruler.y + ruler.h / 2);
    await page.waitForFunction(() => window.memscope.lenses().moment > 5);
    l = await lens(page);
    assert.equal(l.totals.allocated_bytes, fp32.liveBytes(l.moment));
    // The moment line sits where the ruler was clicked.
    const line = await page.$eval('#moment-line', (e) => e.getBoundingClientRect().left);
    assert.ok(Math.abs(line - (ruler.x + ruler.w * 0.4)) < 3, `line at ${line}`);
    await screenshot(page, 'lenses-state');
    assert.deepEqual(errors, []);
  } finally {
    await b.close();
  }
});

test('one selection in every view: events → segments, lanes, flame, detail; timeline → table, blocks, point', async () => {
  const b = await open([FP32]);
  const { page, errors } = b;
  try {
    // Select allocation #0 (the first alloc entry) from the event list.
    await tab(page, 'events');
    await page.focus('#events-grid');
    await page.keyboard.press('Home');
    await waitMoment(page, 0);
    await page.click('#events-list .grid-row[data-index="0"]');
    await page.waitForSelector('#detail-body[data-allocation="0"]');
    await waitMoment(page, 1);
    assert.equal((await lens(page)).selected, 0);
    await page.waitForSelector('#events-list .grid-row.selected[data-allocation="0"]');

    // The segment timeline expands the row of the segment holding it, and draws it.
    await tab(page, 'segments');
    const row0 = segmentRow(fp32, fp32.allocs[0].addr);
    assert.ok(row0 >= 0);
    await page.waitForFunction((r) => window.memscope.lenses().segments.expanded === r && window.memscope.lenses().segments.selectedDrawn, row0);
    assert.equal((await lens(page)).segments.rows, corpus.get('forward-fp32.pickle#0').segments);
    await screenshot(page, 'lenses-segments');

    // Its lane is found and it is drawn there.
    await tab(page, 'lanes');
    await page.waitForFunction(() => {
      const s = window.memscope.lenses().sites;
      return s.selectedRow !== null && s.selectedDrawn;
    });
    // The flame graph (bytes live at moment 1) finds its node.
    await tab(page, 'flame');
    await page.waitForFunction(() => document.getElementById('lens-flame-pane').dataset.moment === '1');
    await page.waitForFunction(() => document.getElementById('lens-flame-pane').dataset.selectedNode !== '');
    assert.equal(Number(await page.$eval('#lens-flame-pane', (e) => e.dataset.total)), fp32.liveBytes(1));

    // Select on the memory timeline: allocation #680 (the 681st alloc entry, 19.5 MiB).
    await page.keyboard.press('f');
    const at = await locate(page, 680);
    await page.mouse.click(at.x, at.y);
    await page.waitForSelector('#detail-body[data-allocation="680"]');
    const a680 = fp32.allocs[680];
    await page.waitForFunction(([s, e]) => {
      const m = window.memscope.lenses().moment;
      return m !== null && m >= s && m < e;
    }, [a680.start, a680.end]);
    // Top allocations (by size): its row is selected.
    await tab(page, 'table');
    await page.waitForSelector('#table-list .grid-row[data-id="680"][aria-selected="true"]');
    // The state panel lists it among the live allocations and in its segment's blocks.
    await page.waitForSelector('#moment-point .point-row.selected[data-id="680"]');
    await page.waitForSelector('#moment-blocks .block-row.selected[data-id="680"]');
    await page.waitForSelector('#moment-segments .seg-row.selected.chosen');
    await tab(page, 'segments');
    await page.waitForFunction((r) => window.memscope.lenses().segments.expanded === r && window.memscope.lenses().segments.selectedDrawn,
      segmentRow(fp32, a680.addr));
    // Esc clears the selection everywhere; a click on the segment timeline selects what
    // is drawn there (#680 again: 19.5 MiB of a 20 MiB segment, a whole row tall).
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => window.memscope.lenses().selected === null && window.memscope.lenses().segments.expanded === null);
    const inSegments = await page.waitForFunction(() => window.memscope.lensLocate('segments', 680));
    const p680 = await inSegments.jsonValue();
    await page.mouse.click(p680.x, p680.y);
    await page.waitForSelector('#detail-body[data-allocation="680"]');
    assert.deepEqual(errors, []);
  } finally {
    await b.close();
  }
});

test('flame graph: the peak weighs the peak bytes; drill in lists and highlights; byte·seconds; bottom-up; search', async () => {
  const b = await open([FP32]);
  const { page, errors } = b;
  try {
    const want = corpus.get('forward-fp32.pickle#0');
    await tab(page, 'flame');
    await page.click('#flame-peak');
    await page.waitForFunction(() => window.memscope.lenses().flame.nodes > 0);
    await page.waitForFunction((t) => Number(document.getElementById('lens-flame-pane').dataset.total) === t, want.peak_allocated_bytes);
    assert.equal(await page.$eval('#lens-flame-pane', (e) => e.dataset.unit), 'bytes');
    assert.match(await page.$eval('#flame-caption', (e) => e.textContent), /^531 MiB live at .* the peak$/);
    // Labels are printed and none overflows its node.
    const labels = await page.$$eval('#flame-labels .flame-label', (ls) => ls.map((l) => {
      const r = l.getBoundingClientRect();
      return { text: l.textContent, x0: r.left, x1: r.right, y: r.top };
    }));
    assert.ok(labels.length >= 2, `${labels.length} labels`);
    assert.ok(labels.some((l) => l.text === '(no call stack)'));
    for (const a of labels) {
      for (const b of labels) {
        if (a !== b && a.y === b.y) assert.ok(a.x1 <= b.x0 + 0.5 || b.x1 <= a.x0 + 0.5, `labels ${a.text} and ${b.text} overlap`);
      }
    }
    await screenshot(page, 'lenses-flame');

    // Drill into "(no call stack)": its allocations are listed and highlighted everywhere.
    let peakMoment = 0;
    for (let m = 0; m <= fp32.events; m++) if (fp32.liveBytes(m) > fp32.liveBytes(peakMoment)) peakMoment = m;
    const noStack = fp32.liveAt(peakMoment).filter((a) => a.nostack);
    const node = await page.$eval('#flame-labels .flame-label', (_) => {
      const l = [...document.querySelectorAll('#flame-labels .flame-label')].find((x) => x.textContent === '(no call stack)');
      const r = l.getBoundingClientRect();
      return { x: r.left + Math.min(r.width / 2, 60), y: r.top + r.height / 2 };
    });
    await page.mouse.click(node.x, node.y);
    await page.waitForFunction(() => window.memscope.lenses().flame.breadcrumb.length === 2);
    let l = await lens(page);
    assert.deepEqual(l.flame.breadcrumb, ['all', '(no call stack)']);
    assert.equal(l.flame.listed, noStack.length);
    await page.waitForFunction((n) => window.memscope.lenses().highlight === n, noStack.length);
    assert.equal(Number(await page.$eval('#flame-node p[data-count]', (e) => e.dataset.count)), noStack.length);
    await screenshot(page, 'lenses-flame-drill');
    // Back to the root by the breadcrumb: the highlight goes.
    await page.click('#flame-crumbs button[data-node="0"]');
    await page.waitForFunction(() => window.memscope.lenses().flame.breadcrumb.length === 1);
    await page.waitForFunction(() => window.memscope.lenses().highlight === null);

    // Bytes × lifetime, in byte·seconds.
    const t = fp32.times;
    const last = t[t.length - 1];
    const at = (m) => (m > fp32.events ? last : t[Math.max(m - 1, 0)]);
    const byteUs = fp32.allocs.reduce((s, a) => s + a.size * (at(a.end) - at(a.start)), 0);
    await page.click('#flame-bytetime');
    await page.waitForFunction(() => document.getElementById('lens-flame-pane').dataset.unit === 'byte-us');
    assert.equal(Number(await page.$eval('#lens-flame-pane', (e) => e.dataset.total)), byteUs);
    assert.match(await page.$eval('#flame-caption', (e) => e.textContent), /·s in all \(byte·seconds\)/);
    // Bottom-up: the same total, other nodes.
    await page.click('#flame-orientation');
    await page.waitForFunction(() => document.getElementById('flame-orientation').textContent.startsWith('Bottom-up'));
    await page.waitForFunction((w) => Number(document.getElementById('lens-flame-pane').dataset.total) === w, byteUs);
    await screenshot(page, 'lenses-flame-bottom-up');
    await page.click('#flame-orientation');
    await page.click('#flame-live');
    await page.waitForFunction(() => document.getElementById('lens-flame-pane').dataset.unit === 'bytes');
    assert.deepEqual(errors, []);
  } finally {
    await b.close();
  }
});

test('top allocations: sorted by size, lifetime, bytes × lifetime and time; filtered by frame text; keyboard; a click zooms to it', async () => {
  const b = await open([FP32]);
  const { page, errors } = b;
  try {
    await tab(page, 'table');
    const rows = () => page.$$eval('#table-list .grid-row[data-id]', (rs) => rs.map((r) => ({ ...r.dataset })));
    await page.waitForSelector('#table-list .grid-row[data-id]');
    const total = Number(await page.$eval('#table-grid', (g) => g.dataset.total));
    assert.equal(total, fp32.allocs.length);
    assert.equal(await page.$eval('#table-grid', (g) => g.getAttribute('role')), 'grid');
    let r = await rows();
    const sizes = fp32.allocs.map((a) => a.size);
    assert.equal(Number(r[0].size), Math.max(...sizes));
    for (let i = 1; i < r.length; i++) assert.ok(Number(r[i - 1].size) >= Number(r[i].size), 'sizes descend');
    assert.equal(await page.$eval('#sort-size', (e) => e.parentElement.getAttribute('aria-sort')), 'descending');
    // Ascending.
    await page.click('#sort-size');
    await page.waitForFunction(() => document.querySelector('#sort-size').parentElement.getAttribute('aria-sort') === 'ascending');
    await page.waitForFunction((s) => document.querySelector('#table-list .grid-row[data-id]')?.dataset.size === String(s), Math.min(...sizes));
    // Lifetime and bytes × lifetime: descending, the first is the longest (µs from the trace).
    const t = fp32.times;
    const last = t[t.length - 1];
    const at = (m) => (m > fp32.events ? last : t[Math.max(m - 1, 0)]);
    const lifetimes = fp32.allocs.map((a) => at(a.end) - at(a.start));
    await page.click('#sort-lifetime');
    await page.waitForFunction(() => document.querySelector('#sort-lifetime').parentElement.getAttribute('aria-sort') === 'descending');
    await page.waitForFunction((v) => document.querySelector('#table-list .grid-row[data-id]')?.dataset.lifetimeUs === String(v), Math.max(...lifetimes));
    await page.click('#sort-bytetime');
    const byteTimes = fp32.allocs.map((a, i) => a.size * lifetimes[i]);
    await page.waitForFunction((v) => Number(document.querySelector('#table-list .grid-row[data-id]')?.dataset.byteUs) === v, Math.max(...byteTimes));
    r = await rows();
    for (let i = 1; i < r.length; i++) assert.ok(Number(r[i - 1].byteUs) >= Number(r[i].byteUs), 'bytes × lifetime descend');
    await page.click('#sort-time');
    await page.waitForFunction(() => document.querySelector('#sort-time').parentElement.getAttribute('aria-sort') === 'ascending');
    // Filter by frame text: the allocations with a frame whose file or function holds it.
    await page.click('#sort-size');
    await page.fill('#table-filter', 'swiglu');
    const swiglu = fp32.allocs.filter((a) => a.frames.includes('swiglu')).length;
    await page.waitForFunction((n) => document.getElementById('table-grid').dataset.total === String(n), swiglu);
    await screenshot(page, 'lenses-table');
    // Keyboard: ↓ ↓ Enter selects the second row and zooms the timeline to it.
    const fit = await view(page);
    await page.focus('#table-grid');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    const second = await page.$eval('#table-list .grid-row[data-index="1"]', (e) => Number(e.dataset.id));
    await page.keyboard.press('Enter');
    await page.waitForSelector(`#detail-body[data-allocation="${second}"]`);
    await page.waitForFunction((span) => { const v = window.memscope.stats().view; return v[1] - v[0] < span * 0.99; }, fit[1] - fit[0]);
    const a = fp32.allocs[second];
    const v = await view(page);
    assert.ok(v[0] <= at(a.start) && at(a.end) <= v[1], 'the zoomed view holds its lifetime');
    assert.equal(await page.$eval('#table-grid', (g) => g.getAttribute('aria-activedescendant')), 'table-row-1');
    // A click on the first row selects it.
    const first = await page.$eval('#table-list .grid-row[data-index="0"]', (e) => Number(e.dataset.id));
    await page.click('#table-list .grid-row[data-index="0"]');
    await page.waitForSelector(`#detail-body[data-allocation="${first}"]`);
    await page.waitForSelector(`#table-list .grid-row[data-id="${first}"][aria-selected="true"]`);
    assert.deepEqual(errors, []);
  } finally {
    await b.close();
  }
});

test('search by size, address and frame text: counts, highlight in every view, next/previous', async () => {
  const b = await open([FP32]);
  const { page, errors } = b;
  try {
    const count = () => page.$eval('#search-count', (e) => ({ ...e.dataset, text: e.textContent }));
    // A size.
    await page.fill('#search', '2048');
    const by2048 = fp32.allocs.filter((a) => a.size === 2048);
    await page.waitForFunction((n) => document.getElementById('search-count').dataset.count === String(n) && document.getElementById('search-count').dataset.kind === 'size', by2048.length);
    await page.waitForFunction((n) => window.memscope.lenses().highlight === n, by2048.length);
    // Enter: the first match is selected; it is 2,048 bytes.
    await page.focus('#search');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.getElementById('search-count').dataset.cursor === '0');
    await page.waitForSelector('#detail-body[data-allocation]');
    assert.match(await page.$eval('#detail-body', (e) => e.innerText), /2\.00 KiB \(2,048 bytes\)/);
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.getElementById('search-count').dataset.cursor === '1');
    await page.keyboard.press('Shift+Enter');
    await page.waitForFunction(() => document.getElementById('search-count').dataset.cursor === '0');
    assert.match((await count()).text, new RegExp(`^1 of ${by2048.length} \\(size\\)$`));
    // Matches are marked in the lists of the other views.
    await tab(page, 'table');
    await page.fill('#table-filter', '');
    await page.click('#sort-size');
    await page.click('#sort-size');
    await tab(page, 'events');
    await page.focus('#events-grid');
    await page.keyboard.press('Home');
    await page.waitForSelector('#events-list .grid-row.match');
    const matched = await page.$$eval('#events-list .grid-row.match', (rs) => rs.map((r) => Number(r.dataset.allocation)));
    const ids2048 = new Set(fp32.allocs.map((a, i) => (a.size === 2048 && i < fp32.traced ? i : -1)));
    for (const id of matched) assert.ok(ids2048.has(id), `#${id} is 2,048 bytes`);
    await screenshot(page, 'lenses-search');
    // An address: the allocations whose bytes hold it.
    const addr = fp32.allocs[3].addr;
    await page.fill('#search', '0x' + addr.toString(16));
    const holding = fp32.allocs.filter((a) => a.addr <= addr && addr < a.addr + Math.max(a.size, 1)).length;
    await page.waitForFunction((n) => document.getElementById('search-count').dataset.count === String(n) && document.getElementById('search-count').dataset.kind === 'address', holding);
    // Frame text, and Enter at once: pressed before the matches come, it is taken when
    // they do.
    await page.fill('#search', 'rmsnorm');
    await page.keyboard.press('Enter');
    const rms = fp32.allocs.filter((a) => a.frames.includes('rmsnorm')).length;
    await page.waitForFunction((n) => document.getElementById('search-count').dataset.count === String(n) && document.getElementById('search-count').dataset.kind === 'frame', rms);
    await page.waitForFunction(() => document.getElementById('search-count').dataset.cursor === '0');
    assert.match((await count()).text, new RegExp(`^1 of ${rms} \\(frame text\\)$`));
    await page.waitForFunction((n) => window.memscope.lenses().highlight === n, rms);
    // Esc clears it and every view is bright again.
    await page.focus('#search');
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => window.memscope.lenses().highlight === null);
    assert.deepEqual(errors, []);
  } finally {
    await b.close();
  }
});

test('range: a drag on the ruler aggregates alive throughout / allocated / freed', async () => {
  const b = await open([FP32]);
  const { page, errors } = b;
  try {
    const ruler = await page.$eval('#x-axis', (e) => { const r = e.getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width, h: r.height }; });
    const y = ruler.y + ruler.h / 2;
    await page.mouse.move(ruler.x + ruler.w * 0.3, y);
    await page.mouse.down();
    await page.mouse.move(ruler.x + ruler.w * 0.45, y, { steps: 4 });
    await page.mouse.move(ruler.x + ruler.w * 0.6, y, { steps: 4 });
    await page.mouse.up();
    await page.waitForSelector('#range-panel:not([hidden])');
    const r = (await lens(page)).range;
    assert.ok(r.m1 > r.m0);
    const alive = fp32.allocs.filter((a) => a.start <= r.m0 && a.end > r.m1);
    const allocated = fp32.allocs.filter((a) => r.m0 < a.start && a.start <= r.m1);
    const freed = fp32.allocs.filter((a) => r.m0 < a.end && a.end <= r.m1);
    const bytes = (xs) => xs.reduce((s, a) => s + a.size, 0);
    assert.equal(r.alive_count, alive.length);
    assert.equal(r.alive_bytes, bytes(alive));
    assert.equal(r.allocated_count, allocated.length);
    assert.equal(r.allocated_bytes, bytes(allocated));
    assert.equal(r.freed_count, freed.length);
    assert.equal(r.freed_bytes, bytes(freed));
    assert.ok(allocated.length > 0 && freed.length > 0);
    const groups = await page.$$eval('#range-body .range-group', (gs) => gs.map((g) => g.querySelectorAll('.range-stacks li').length));
    assert.ok(groups.every((n) => n > 0 && n <= 5), 'top stacks per group');
    const shade = await page.$eval('#range-shade', (e) => { const b = e.getBoundingClientRect(); return [b.left, b.right]; });
    assert.ok(Math.abs(shade[0] - (ruler.x + ruler.w * 0.3)) < 3 && Math.abs(shade[1] - (ruler.x + ruler.w * 0.6)) < 3, `shade ${shade}`);
    await screenshot(page, 'lenses-range');
    await page.click('#range-clear');
    await page.waitForSelector('#range-panel[hidden]', { state: 'attached' });
    assert.deepEqual(errors, []);
  } finally {
    await b.close();
  }
});

test('call-site lanes: rows by peak; hover lists the stacked allocations; zoom synced both ways', async () => {
  const b = await open([FP32]);
  const { page, errors } = b;
  try {
    await tab(page, 'lanes');
    await laidOut(page, 'sites');
    const peaks = await page.$$eval('#sites-gutter .row-size', (rs) => rs.map((r) => Number(/\(([\d,]+) bytes\)/.exec(r.title)[1].replaceAll(',', ''))));
    assert.ok(peaks.length >= 5);
    for (let i = 1; i < peaks.length; i++) assert.ok(peaks[i - 1] >= peaks[i], 'rows ordered by peak');
    // The first lane holds the allocations recorded without a stack (made before the
    // trace, live throughout): its peak and what a hover lists.
    const noStack = fp32.allocs.filter((a) => a.nostack);
    let peak = 0;
    for (let m = 0; m <= fp32.events; m++) peak = Math.max(peak, noStack.filter((a) => a.start <= m && m < a.end).reduce((s, a) => s + a.size, 0));
    assert.equal(peaks[0], peak);
    const box = await page.$eval('#sites-canvas', (c) => { const r = c.getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width }; });
    await page.mouse.move(box.x + box.w * 0.5, box.y + 14);
    await page.waitForSelector('#sites-hover:not([hidden])');
    await page.waitForFunction((n) => document.getElementById('sites-hover').dataset.count === String(n), noStack.length);
    assert.match(await page.$eval('#sites-hover', (e) => e.textContent), /allocations live at .* bottom first/);
    await screenshot(page, 'lenses-lanes');
    // Ctrl+wheel on the lanes zooms the memory timeline; the lanes follow its x range.
    const fit = await view(page);
    await page.keyboard.down('Control');
    await page.mouse.wheel(0, -300);
    await page.keyboard.up('Control');
    const zoomed = await view(page);
    assert.ok(zoomed[1] - zoomed[0] < 0.6 * (fit[1] - fit[0]));
    await laidOut(page, 'sites');
    // And the timeline's own zoom (W) moves the lanes.
    await page.mouse.move(box.x - 200, box.y - 300);
    await page.keyboard.press('w');
    const again = await view(page);
    assert.ok(again[1] - again[0] < zoomed[1] - zoomed[0]);
    await laidOut(page, 'sites');
    // A drag on the lanes pans the timeline.
    await page.mouse.move(box.x + box.w * 0.6, box.y + 40);
    await page.mouse.down();
    await page.mouse.move(box.x + box.w * 0.5, box.y + 40, { steps: 5 });
    await page.mouse.up();
    const panned = await view(page);
    assert.ok(panned[0] > again[0], 'dragging left moves the view right');
    await laidOut(page, 'sites');
    assert.deepEqual(errors, []);
  } finally {
    await b.close();
  }
});

test('private pools: envelopes from the oracle cases; none for the default pool', async () => {
  // The oracle cases (PyTorch's viewer): map 500, alloc 500, free, map 400,
  // alloc 400, snapshot 900 → 900; snapshot 2000 reserved, one alloc of 300 and no
  // segment entries → 2000; segment entries of the default pool → no envelope.
  const A = 0x10000000;
  const B = 0x20000000;
  const C = 0x30000000;
  const seg = (device, address, total, pool, blocks, expandable = false) => ({
    device, address, total_size: total, stream: 0, segment_type: 'large', segment_pool_id: pool,
    is_expandable: expandable, blocks, frames: [],
  });
  const e = (action, addr, size) => ({ action, addr, size, stream: 0 });
  const snap = {
    segments: [
      seg(0, A, 900, [1, 0], [
        { address: A, size: 500, requested_size: 0, state: 'inactive' },
        { address: A + 500, size: 400, requested_size: 400, state: 'active_allocated' },
      ], true),
      seg(1, B, 2000, [2, 0], [
        { address: B, size: 300, requested_size: 300, state: 'active_allocated' },
        { address: B + 300, size: 1700, requested_size: 0, state: 'inactive' },
      ]),
      seg(2, C, 1000, [0, 0], [{ address: C, size: 1000, requested_size: 0, state: 'inactive' }]),
    ],
    device_traces: [
      [e('segment_map', A, 500), e('alloc', A, 500), e('free_completed', A, 500), e('segment_map', A + 500, 400), e('alloc', A + 500, 400)],
      [e('alloc', B, 300)],
      [e('segment_alloc', C, 1000), e('alloc', C, 100), e('free_completed', C, 100)],
    ],
  };
  const dir = await mkdtemp(join(tmpdir(), 'memscope-pools-'));
  const file = join(dir, 'pools.json');
  await writeFile(file, JSON.stringify(snap));
  const b = await open([file]);
  const { page, errors } = b;
  try {
    await tab(page, 'pools');
    const scales = async (device) => {
      await page.click(`.device[data-device="${device}"]`);
      await page.waitForFunction((d) => document.getElementById('view-title').textContent.endsWith(`device ${d}`), device);
      await page.waitForFunction(() => window.memscope.lenses().moment !== null);
      await page.waitForFunction(() => document.getElementById('lens-pools-pane').dataset.pools !== undefined);
      const has = await page.$eval('#lens-pools-pane', (p) => p.dataset.pools);
      if (has === '0') return null;
      await page.waitForFunction(() => (document.getElementById('pools-scroll').dataset.scales || '') !== '');
      return page.$eval('#pools-scroll', (e) => e.dataset.scales);
    };
    assert.equal(await scales(0), '900');
    assert.equal(await page.$eval('#pools-gutter .row-size', (e) => e.textContent), '900 B');
    await screenshot(page, 'lenses-pools');
    assert.equal(await scales(1), '2000');
    assert.equal(await scales(2), null);
    assert.match(await page.$eval('#pools-note', (e) => e.textContent), /no private pools/);
    assert.deepEqual(errors, []);
  } finally {
    await b.close();
  }
});

test('allocator settings with units, the roundup table, and OOM events on the timeline', async () => {
  // The crafted snapshot (tests/crafted/generate.py), with roundup_power2_divisions as
  // torch/csrc/cuda/memory_snapshot.cpp writes it: one key per interval, its start in MiB.
  const crafted = JSON.parse(await readFile(CRAFTED, 'utf8'));
  const divisions = {};
  for (let i = 0; i < 16; i++) divisions[String(2 ** i)] = i === 1 ? 4 : i === 15 ? 8 : i === 0 ? 1 : 0;
  crafted.allocator_settings.roundup_power2_divisions = divisions;
  const dir = await mkdtemp(join(tmpdir(), 'memscope-settings-'));
  const file = join(dir, 'settings.json');
  await writeFile(file, JSON.stringify(crafted));
  const b = await open([file]);
  const { page, errors } = b;
  try {
    await tab(page, 'settings');
    await page.waitForSelector('#lens-settings dd[data-key="max_split_size"]');
    const value = (k) => page.$eval(`#lens-settings dd[data-key="${k}"]`, (e) => e.textContent);
    // Values from tests/crafted/generate.py: max_split_size −1, threshold 0.8.
    assert.equal(await value('max_split_size'), 'unlimited');
    assert.match(await value('garbage_collection_threshold'), /^80%/);
    assert.equal(await value('expandable_segments'), 'on');
    // Interval i holds sizes from 2^(20+i) bytes (the first also everything smaller).
    const rows = await page.$$eval('#roundup-table tr[data-divisions]', (rs) => rs.map((r) => [Number(r.dataset.minBytes), Number(r.dataset.divisions)]));
    assert.equal(rows.length, 16);
    assert.deepEqual(rows[0], [0, 1]);
    assert.deepEqual(rows[1], [2 * 2 ** 20, 4]);
    assert.deepEqual(rows[15], [2 ** 35, 8]);
    for (const r of rows.slice(2, 15)) assert.equal(r[1], 0);
    assert.equal(await page.$eval('#roundup-table tr[data-divisions] td', (e) => e.textContent), 'below 2 MiB');
    // The OOM entry: asked for 2**36 bytes with 123,456,789 free (the generator's values).
    const mark = await page.waitForSelector('#oom-marks .oom-mark');
    assert.equal(await mark.getAttribute('data-requested-bytes'), String(2 ** 36));
    assert.equal(await mark.getAttribute('data-device-free-bytes'), '123456789');
    assert.match(await mark.getAttribute('title'), /68,719,476,736 bytes.*123,456,789 bytes/);
    assert.equal(await page.$eval('#oom-marks .oom-size', (e) => e.textContent), '64.0 GiB asked, 118 MiB free');
    await screenshot(page, 'lenses-settings-oom');
    // A click on it: the moment after the OOM entry (entry 16 of device 0's trace).
    await page.click('#oom-marks .oom-flag');
    await waitMoment(page, 17);
    assert.deepEqual(errors, []);
  } finally {
    await b.close();
  }
});

test('a range drag brings its figures into view, one line per call site; Esc clears the range and the selection', async () => {
  const b = await open([FP32]);
  const { page, errors } = b;
  try {
    // A window short enough that the range panel starts below the side column's fold.
    await page.setViewportSize({ width: 1400, height: 640 });
    const at = await locate(page, 680);
    await page.mouse.click(at.x, at.y);
    await page.waitForSelector('#detail-body[data-allocation="680"]');
    await page.$eval('#detail', (d) => { d.scrollTop = 0; });
    const ruler = await page.$eval('#x-axis', (e) => { const r = e.getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width, h: r.height }; });
    const y = ruler.y + ruler.h / 2;
    await page.mouse.move(ruler.x + ruler.w * 0.2, y);
    await page.mouse.down();
    await page.mouse.move(ruler.x + ruler.w * 0.5, y, { steps: 4 });
    await page.mouse.move(ruler.x + ruler.w * 0.8, y, { steps: 4 });
    await page.mouse.up();
    await page.waitForSelector('#range-panel:not([hidden])');
    // In view: the side column scrolled to the range's figures.
    await page.waitForFunction(() => {
      const p = document.getElementById('range-panel').getBoundingClientRect();
      const d = document.getElementById('detail').getBoundingClientRect();
      return document.getElementById('detail').scrollTop > 0 && p.top < d.bottom - 60 && p.bottom > d.top + 60;
    });
    // Stacks that share a call site are one line.
    const groups = await page.$$eval('#range-body .range-group', (gs) => gs.map((g) => [...g.querySelectorAll('.range-stacks .site')].map((s) => s.textContent)));
    assert.ok(groups.some((labels) => labels.length > 1));
    for (const labels of groups) assert.equal(new Set(labels).size, labels.length, `a label twice: ${labels}`);
    // Esc: no range, no selection, no shade.
    await page.mouse.move(ruler.x + ruler.w * 0.5, ruler.y - 200);
    await page.keyboard.press('Escape');
    await page.waitForSelector('#range-panel[hidden]', { state: 'attached' });
    const l = await lens(page);
    assert.equal(l.range, undefined);
    assert.equal(l.selected, null);
    assert.equal(await page.$eval('#range-shade', (e) => e.hidden), true);
    assert.deepEqual(errors, []);
  } finally {
    await b.close();
  }
});

test('Find + Enter zooms so that a match too thin to see at Fit is drawn; Esc in Find clears the box and q=', async () => {
  const b = await open([FP32]);
  const { page, errors } = b;
  try {
    await page.waitForFunction(() => window.memscope.stats().settled);
    // Allocations that are their address' first match (search answers in allocation
    // order) and that Fit does not draw one by one.
    const holds = (a, addr) => a.addr <= addr && addr < a.addr + Math.max(a.size, 1);
    const own = [];
    for (let i = 0; i < fp32.traced && own.length < 400; i++) {
      const addr = fp32.allocs[i].addr;
      if (fp32.allocs.findIndex((a) => holds(a, addr)) === i) own.push(i);
    }
    const hidden = await page.evaluate((ids) => ids.filter((id) => window.memscope.locate(id) === null), own);
    assert.ok(hidden.length > 0, 'some allocation is too thin to draw at Fit');
    const id = hidden[0];
    const addr = fp32.allocs[id].addr;
    const count = fp32.allocs.filter((a) => holds(a, addr)).length;
    await page.fill('#search', '0x' + addr.toString(16));
    await page.waitForFunction((n) => document.getElementById('search-count').dataset.count === String(n), count);
    await page.focus('#search');
    await page.keyboard.press('Enter');
    await page.waitForFunction((i) => window.memscope.lenses().selected === i, id);
    // Drawn where the user looks: located on the timeline once the zoomed strips are in.
    const at = await locate(page, id);
    const canvas = await page.$eval('#canvas', (c) => { const r = c.getBoundingClientRect(); return [r.left, r.right]; });
    assert.ok(at.x >= canvas[0] && at.x <= canvas[1]);
    await page.waitForFunction(() => new URLSearchParams(location.hash.slice(1)).has('q'));
    // Esc in the box: empty box, nothing highlighted, no q= in the link.
    await page.keyboard.press('Escape');
    assert.equal(await page.$eval('#search', (e) => e.value), '');
    await page.waitForFunction(() => window.memscope.lenses().highlight === null);
    await page.waitForFunction(() => !new URLSearchParams(location.hash.slice(1)).has('q'));
    assert.equal((await lens(page)).selected, id, 'the selection stays');
    assert.deepEqual(errors, []);
  } finally {
    await b.close();
  }
});

test('Shift+→ steps ten entries in the event list as everywhere else', async () => {
  const b = await open([FP32]);
  const { page, errors } = b;
  try {
    await tab(page, 'events');
    await page.focus('#events-grid');
    await page.keyboard.press('Home');
    await waitMoment(page, 0);
    await page.keyboard.press('Shift+ArrowRight');
    await waitMoment(page, 10);
    await page.keyboard.press('Shift+ArrowDown');
    await waitMoment(page, 20);
    await page.click('#moment-summary');
    await page.keyboard.press('Shift+ArrowRight');
    await waitMoment(page, 30);
    await page.keyboard.press('Shift+ArrowLeft');
    await waitMoment(page, 20);
    assert.deepEqual(errors, []);
  } finally {
    await b.close();
  }
});

test('the detail panel shows the lifetime the table counts, never "—" for an allocation with times', async () => {
  const b = await open([FP32]);
  const { page, errors } = b;
  try {
    await tab(page, 'table');
    await page.click('#sort-lifetime');
    await page.waitForSelector('#table-list .grid-row[data-id][data-lifetime-us]');
    // The longest-lived allocations (those live at the end or made before the trace,
    // clipped to the window) and a short one: each as the table says.
    const rows = await page.$$eval('#table-list .grid-row[data-id][data-lifetime-us]', (rs) => rs.map((r) => [Number(r.dataset.id), Number(r.dataset.lifetimeUs)]));
    assert.ok(rows.length > 2);
    for (const [id, us] of [rows[0], rows[1], rows[rows.length - 1]]) {
      await page.click(`#table-list .grid-row[data-id="${id}"]`);
      await page.waitForSelector(`#detail-body[data-allocation="${id}"]`);
      assert.equal(Number(await page.$eval('#detail-body', (e) => e.dataset.lifetimeUs)), us, `#${id}`);
      const text = await page.$eval('#detail-body', (e) => {
        const dt = [...e.querySelectorAll('dt')].find((d) => d.textContent === 'Lifetime');
        return dt.nextElementSibling.textContent;
      });
      assert.doesNotMatch(text, /—/, `#${id}: ${text}`);
    }
    assert.deepEqual(errors, []);
  } finally {
    await b.close();
  }
});
