// Export (issue 12, interactions 1 and 4): every download is named by the file's path
// relative to the folder opened, so two runs' rank0.pickle export apart; the anomalies
// come out as JSON lines and every table as CSV, each confirmed in the status line.
// Oracles: CPython reading the same files (entries and actions of the trace, the
// allocator settings), the page's own anomaly list (checked against `memscope
// anomalies --json` in fleet.test.mjs) and what each table shows: its rows, in order,
// and their figures.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, mkdir, copyFile, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve, browser, screenshot, root, fixtures } from './harness.mjs';

const SOURCE = join(fixtures, 'corpus', 'real', 'external-annotations.pickle');
// A real snapshot that records its allocator settings.
const SETTINGS_FILE = join(fixtures, 'corpus', 'real', 'forward-fp32.pickle');
const pp1 = 'runs/tp2_pp1/rank0.pickle';
const pp2 = 'runs/tp2_pp2/rank0.pickle';

let server;
let work;
let runs;

function run(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** Device 0's trace as CPython reads it: entries and how many of each action. */
function trace(path) {
  const script = `
import json, pickle, sys
with open(sys.argv[1], 'rb') as f:
    snap = pickle.load(f)
entries = (snap.get('device_traces') or [[]])[0]
actions = {}
for e in entries:
    actions[e['action']] = actions.get(e['action'], 0) + 1
print(json.dumps({'entries': len(entries), 'actions': actions}))
`;
  return JSON.parse(run('python3', ['-c', script, path]));
}

before(async () => {
  work = await mkdtemp(join(tmpdir(), 'memscope-export-'));
  // Two ranks, the second running out of memory (an anomaly to export); then laid out
  // as two runs that each hold a rank0.pickle.
  const gen = join(work, 'gen');
  run('python3', [join(root, 'bench', 'fleet.py'), '--source', SOURCE, '--out', gen,
    '--ranks', '2', '--iterations', '2', '--oom-rank', '1']);
  const manifest = JSON.parse(await readFile(join(gen, 'manifest.json'), 'utf8'));
  runs = join(work, 'runs');
  for (const [i, dir] of ['tp2_pp1', 'tp2_pp2'].entries()) {
    await mkdir(join(runs, dir), { recursive: true });
    await copyFile(join(gen, manifest.files[i].file), join(runs, dir, 'rank0.pickle'));
  }
  server = await serve();
});
after(async () => {
  await server.close();
  await rm(work, { recursive: true, force: true });
});

/** The name and text of the download `action` starts, and the status line after it. */
async function downloaded(page, action) {
  const [download] = await Promise.all([page.waitForEvent('download', { timeout: 60000 }), action()]);
  const text = await readFile(await download.path(), 'utf8');
  const name = download.suggestedFilename();
  await page.waitForFunction((n) => document.getElementById('export-status').textContent.startsWith(`Saved ${n}`), name);
  const status = await page.$eval('#export-status', (e) => e.textContent);
  return { name, text, status };
}

async function exportAs(page, format) {
  await page.selectOption('#export-format', format);
  return downloaded(page, () => page.click('#export-go'));
}

/** An RFC 4180 document read into rows of fields (quoted fields may hold commas,
 * doubled quotes and line breaks); the header first. */
function csv(text) {
  assert.ok(text.endsWith('\r\n'), 'CRLF line ends');
  const out = [];
  let row = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { field += '"'; i++; }
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') { row.push(field); field = ''; }
    else if (c === '\r' && text[i + 1] === '\n') { row.push(field); out.push(row); row = []; field = ''; i++; }
    else field += c;
  }
  assert.equal(field + row.join(), '', 'the document ends with a line end');
  return out;
}

/** A CSV's rows as objects keyed by its header, after checking the header. */
function records(text, header) {
  const [head, ...body] = csv(text);
  assert.equal(head.join(','), header);
  return body.map((r) => {
    assert.equal(r.length, head.length, r.join('|'));
    return Object.fromEntries(head.map((h, i) => [h, r[i]]));
  });
}

/** A count as the page writes it, thousands grouped by any separator. */
const count = (n) => String(n).replace(/\B(?=(\d{3})+$)/g, '[ ,\u202f\u00a0]?');

/** A CSV document's lines split into fields (the fields here hold no comma or quote
 * but in the call site, the last column). */
function rows(text) {
  assert.ok(text.endsWith('\r\n'), 'CRLF line ends');
  return text.slice(0, -2).split('\r\n');
}

test('two runs with the same file names export apart; the tables as CSV and the anomalies as JSON lines, each confirmed', async () => {
  const b = await browser();
  const { page, errors } = b;
  try {
    await page.goto(server.url);
    await page.waitForSelector('body[data-status="empty"]');
    await (await page.$('#folder-input')).setInputFiles(runs);
    for (const f of [pp1, pp2]) {
      await page.waitForSelector(`.device[data-file="${f}"][data-peak-allocated-bytes]`, { timeout: 60000 });
    }
    await page.click(`.device[data-file="${pp2}"]`);
    await page.waitForFunction((f) => document.getElementById('view-title').textContent.startsWith(f), pp2);
    await page.waitForSelector('body[data-status="ready"]');
    await page.click('#export-open');

    // Figures: named by the path, not "rank0".
    const svg2 = await exportAs(page, 'svg');
    assert.equal(svg2.name, 'runs_tp2_pp2_rank0-device0.svg');
    assert.match(svg2.status, /^Saved runs_tp2_pp2_rank0-device0\.svg: SVG figure, \d/);
    assert.match(svg2.text, /runs\/tp2_pp2\/rank0\.pickle — device 0/);

    // The event list, whole: CPython's entries and actions of the same file.
    const want = trace(join(runs, 'tp2_pp2', 'rank0.pickle'));
    const events = await exportAs(page, 'events-csv');
    assert.equal(events.name, 'runs_tp2_pp2_rank0-device0-events.csv');
    const ev = rows(events.text);
    assert.equal(ev[0], 'entry,moment,action,address,size_bytes,time_us,stream,allocation,device_free_bytes,call_site');
    assert.equal(ev.length - 1, want.entries);
    const actions = {};
    for (const line of ev.slice(1)) {
      const a = line.split(',')[2];
      actions[a] = (actions[a] || 0) + 1;
    }
    assert.deepEqual(actions, want.actions);
    assert.ok(ev.slice(1).every((l, i) => l.startsWith(`${i},${i + 1},`)), 'entries in trace order');
    assert.match(events.status, new RegExp(`^Saved ${events.name}: ${count(want.entries)} trace entries, `));

    // The top allocations as the table shows them: every row, largest first; one row
    // per alloc entry of the trace, plus those from before it.
    await page.click('#tab-table');
    await page.waitForFunction(() => Number(document.getElementById('table-grid').dataset.total) > 0);
    const total = Number(await page.$eval('#table-grid', (g) => g.dataset.total));
    const top = await exportAs(page, 'top-csv');
    assert.equal(top.name, 'runs_tp2_pp2_rank0-device0-top-allocations.csv');
    const tr = rows(top.text);
    assert.equal(tr[0].split(',').slice(0, 10).join(','), 'allocation,address,size_bytes,lifetime_us,lifetime_entries,byte_us,alloc_time_us,free_time_us,before_window,live_at_end');
    assert.equal(tr.length - 1, total, 'every row of the table');
    const fields = tr.slice(1).map((l) => l.split(','));
    assert.equal(fields.filter((f) => f[8] === 'false').length, want.actions.alloc, 'one row per alloc entry');
    const sizes = fields.map((f) => Number(f[2]));
    assert.ok(sizes.every((s, i) => i === 0 || s <= sizes[i - 1]), 'largest first');
    assert.equal(new Set(fields.map((f) => f[0])).size, fields.length, 'each allocation once');
    assert.match(top.status, new RegExp(`^Saved ${top.name}: ${count(total)} allocations, `));

    // The other run's rank0.pickle, chosen with the keyboard: a different name.
    await page.focus(`.device[data-file="${pp1}"]`);
    await page.keyboard.press('Enter');
    await page.waitForFunction((f) => document.getElementById('view-title').textContent.startsWith(f), pp1);
    const svg1 = await exportAs(page, 'svg');
    assert.equal(svg1.name, 'runs_tp2_pp1_rank0-device0.svg');

    // Anomalies: the lines of the page's anomaly list, in its order, named by path.
    await page.click('#view-fleet');
    await page.waitForSelector('#fleet[data-status="ready"]', { timeout: 60000 });
    const listed = await page.$$eval('#fleet-anomalies li.anomaly', (ls) => ls.map((l) => ({ ...l.dataset })));
    assert.ok(listed.some((a) => a.kind === 'oom'), 'the OOM rank is listed');
    // The dialog stays open across views.
    assert.equal(await page.$eval('#export-dialog', (d) => d.hidden), false);
    const anomalies = await exportAs(page, 'anomalies');
    assert.equal(anomalies.name, 'memscope-anomalies.jsonl');
    assert.match(anomalies.status, new RegExp(`: ${listed.length} ${listed.length === 1 ? 'anomaly' : 'anomalies'},`));
    const lines = anomalies.text.trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(lines.map((a) => a.key), listed.map((a) => a.key));
    assert.deepEqual(lines.map((a) => String(a.bytes)), listed.map((a) => a.bytes));
    for (const a of lines) {
      assert.ok([pp1, pp2].includes(a.path), a.path);
      assert.ok(Array.isArray(a.warnings));
    }
    await screenshot(page, 'export-anomalies');

    // The ranks overview: every row in the table's order, with its figures.
    const shownRanks = await page.$$eval('#fleet-overview tr.rank-row', (rs) => rs.map((r) => ({ ...r.dataset })));
    const ranks = await exportAs(page, 'ranks-csv');
    assert.equal(ranks.name, 'memscope-ranks.csv');
    const rr = records(ranks.text, 'path,file,rank,device,peak_allocated_bytes,peak_reserved_bytes,allocated_bytes,events,ooms,outlier,outlier_metrics,growth_bytes_per_iteration');
    assert.equal(rr.length, shownRanks.length);
    assert.deepEqual(rr.map((r) => r.path).sort(), [pp1, pp2], 'each run by its path');
    assert.deepEqual(
      rr.map((r) => [r.file, r.device, r.peak_allocated_bytes, r.peak_reserved_bytes, r.allocated_bytes, r.events, r.ooms, r.outlier]),
      shownRanks.map((s) => [s.file, s.device, s.peakAllocatedBytes, s.peakReservedBytes, s.allocatedBytes, s.events, s.ooms, s.outlier]),
    );
    assert.ok(rr.some((r) => Number(r.ooms) > 0), 'the OOM rank');
    assert.match(ranks.status, new RegExp(`^Saved memscope-ranks\\.csv: ${rr.length} rank rows, `));

    // Compare by call site: the rows the table lists (unchanged sites hidden), in order.
    await page.click('#compare-run');
    await page.waitForSelector('#compare-result[data-status="ready"]', { timeout: 60000 });
    if (await page.$('[data-action="compare-more"]')) await page.click('[data-action="compare-more"]');
    const shownSites = await page.$$eval('.compare-table tr.site-row', (trs) => trs.map((t) => ({ ...t.dataset })));
    assert.ok(shownSites.length > 0, 'the OOM rank holds other call sites');
    const sites = await exportAs(page, 'compare-csv');
    assert.match(sites.name, /^runs_tp2_pp[12]_rank0-device0-vs-runs_tp2_pp[12]_rank0-device0-compare-sites\.csv$/);
    assert.notEqual(sites.name.slice(0, 22), sites.name.split('-vs-')[1].slice(0, 22), 'two different runs');
    const sr = records(sites.text, 'change,call_site,site_key,delta_bytes,a_bytes_at_peak,b_bytes_at_peak,a_live_at_peak,b_live_at_peak,a_allocations,b_allocations');
    assert.deepEqual(
      sr.map((r) => [r.change, r.call_site, r.site_key, r.delta_bytes]),
      shownSites.map((s) => [s.change, s.siteLabel, s.siteKey, s.deltaBytes]),
    );
    for (const r of sr) {
      assert.equal(Number(r.delta_bytes), Number(r.b_bytes_at_peak) - Number(r.a_bytes_at_peak), r.call_site);
    }
    assert.match(sites.status, new RegExp(`: ${count(sr.length)} call sites?, `));
    assert.deepEqual(errors, []);
  } finally {
    await b.close();
  }
});

/** Device 0's allocator settings as CPython reads them: the keys in file order. */
function settingKeys(path) {
  const script = `
import json, pickle, sys
with open(sys.argv[1], 'rb') as f:
    snap = pickle.load(f)
print(json.dumps(list((snap.get('allocator_settings') or {}).keys())))
`;
  return JSON.parse(run('python3', ['-c', script, path]));
}

test('the allocator settings, the segments at the moment and the what-if table as CSV, as the page shows them', async () => {
  const b = await browser();
  const { page, errors } = b;
  try {
    await page.goto(server.url);
    await page.waitForSelector('body[data-status="empty"]');
    await (await page.$('#file-input')).setInputFiles(SETTINGS_FILE);
    await page.waitForSelector('body[data-status="ready"]', { timeout: 60000 });
    await page.waitForSelector('#lens-settings dd[data-key]', { state: 'attached', timeout: 60000 });
    await page.waitForSelector('#moment-panel[data-segments]:not([data-segments=""])', { state: 'attached', timeout: 60000 });
    await page.click('#export-open');

    // Settings: CPython's keys, in file order; the page's values.
    const keys = settingKeys(SETTINGS_FILE);
    assert.ok(keys.length >= 5, 'the file records its settings');
    const shownSettings = await page.$$eval('#lens-settings dd[data-key]', (ds) => ds.map((d) => [d.dataset.key, d.textContent]));
    const settings = await exportAs(page, 'settings-csv');
    assert.equal(settings.name, 'forward-fp32-device0-allocator-settings.csv');
    const st = records(settings.text, 'setting,value,recorded,bytes,unlimited,fraction,flag');
    assert.deepEqual(st.map((r) => r.setting), keys);
    assert.deepEqual(st.map((r) => [r.setting, r.value]), shownSettings);
    assert.match(settings.status, new RegExp(`^Saved ${settings.name}: ${keys.length} settings, `));

    // Its roundup_power2_divisions table: the rows the tab shows, in order.
    const shownRoundup = await page.$$eval('#roundup-table tr[data-divisions]', (rs) => rs.map((r) => [r.cells[0].textContent, r.dataset.minBytes, r.dataset.divisions]));
    assert.ok(shownRoundup.length > 0, 'the file records roundup_power2_divisions');
    const roundup = await exportAs(page, 'roundup-csv');
    assert.equal(roundup.name, 'forward-fp32-device0-roundup-power2-divisions.csv');
    const ru = records(roundup.text, 'sizes,min_bytes,max_bytes,divisions');
    assert.deepEqual(ru.map((r) => [r.sizes, r.min_bytes, r.divisions]), shownRoundup);
    assert.ok(ru.slice(0, -1).every((r, i) => r.max_bytes === ru[i + 1].min_bytes), 'intervals meet');
    assert.match(roundup.status, new RegExp(`^Saved ${roundup.name}: ${shownRoundup.length} size intervals?, `));

    // The segments at the moment (the peak): as many as the panel lists, their sizes
    // adding up to the reserved bytes it shows.
    const moment = await page.$eval('#moment-panel', (p) => p.dataset.moment);
    const segments = Number(await page.$eval('#moment-panel', (p) => p.dataset.segments));
    const reserved = Number(await page.$eval('#moment-summary dd[data-key="reserved_bytes"]', (d) => d.dataset.value));
    const allocated = Number(await page.$eval('#moment-summary dd[data-key="allocated_bytes"]', (d) => d.dataset.value));
    assert.ok(segments > 0);
    const state = await exportAs(page, 'state-csv');
    assert.equal(state.name, `forward-fp32-device0-allocator-state-moment${moment}.csv`);
    const sg = records(state.text, 'moment,segment_address,size_bytes,stream,pool_id,expandable,allocated_bytes,block_bytes,pending_free_bytes,free_bytes,largest_free_bytes,blocks,free_gaps,in_snapshot,call_site');
    assert.equal(sg.length, segments);
    assert.ok(sg.every((r) => r.moment === moment));
    const sum = (k) => sg.reduce((a, r) => a + Number(r[k]), 0);
    assert.equal(sum('size_bytes'), reserved, 'Σ segment sizes = reserved');
    assert.ok(sum('allocated_bytes') <= allocated);
    const addresses = sg.map((r) => BigInt(r.segment_address));
    assert.ok(addresses.every((a, i) => i === 0 || a > addresses[i - 1]), 'by address');
    for (const r of sg) {
      assert.equal(Number(r.block_bytes) + Number(r.free_bytes), Number(r.size_bytes), r.segment_address);
    }
    assert.match(state.status, new RegExp(`^Saved ${state.name}: ${count(segments)} segments? at moment `));

    // What if: asked for before the table exists, then the rows the table shows.
    await page.selectOption('#export-format', 'whatif-csv');
    await page.click('#export-go');
    assert.match(await page.$eval('#export-status', (e) => e.textContent), /^Could not export: replay the what-if table first/);
    await page.click('#tab-settings');
    await page.waitForSelector('#whatif-table tr[data-config]', { timeout: 60000 });
    const shownRows = await page.$$eval('#whatif-table tr[data-config]', (rs) => rs.map((r) => [r.dataset.config, r.dataset.peakReservedBytes, r.dataset.cachedBytes, r.dataset.ooms]));
    const whatif = await exportAs(page, 'whatif-csv');
    assert.equal(whatif.name, 'forward-fp32-device0-what-if.csv');
    const wr = records(whatif.text, 'config,capacity,peak_reserved_bytes,peak_after_first_oom,vs_recorded_bytes,cached_at_peak_bytes,ooms,start_over_capacity,initial_reserved_bytes,first_oom_entry,first_oom_requested_bytes,first_oom_reserved_bytes,first_oom_cached_bytes,first_oom_largest_free_bytes');
    assert.deepEqual(wr.map((r) => [r.config, r.peak_reserved_bytes, r.cached_at_peak_bytes, r.ooms]), shownRows);
    assert.equal(wr[0].config, 'recorded');
    assert.equal(wr[0].vs_recorded_bytes, '');
    for (const r of wr.slice(1)) {
      assert.equal(Number(r.vs_recorded_bytes), Number(r.peak_reserved_bytes) - Number(wr[0].peak_reserved_bytes), r.config);
    }
    assert.match(whatif.status, new RegExp(`^Saved ${whatif.name}: ${wr.length} configurations?, `));
    assert.deepEqual(errors, []);
  } finally {
    await b.close();
  }
});
