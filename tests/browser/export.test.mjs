// Export (issue 12, interactions 1 and 4): every download is named by the file's path
// relative to the folder opened, so two runs' rank0.pickle export apart; the anomalies
// come out as JSON lines and the tables as CSV, each confirmed in the status line.
// Oracles: CPython reading the same files (entries and actions of the trace), the
// page's own anomaly list (checked against `memscope anomalies --json` in
// fleet.test.mjs) and the table's row count.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, mkdir, copyFile, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve, browser, screenshot, root, fixtures } from './harness.mjs';

const SOURCE = join(fixtures, 'corpus', 'real', 'external-annotations.pickle');
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
    assert.deepEqual(errors, []);
  } finally {
    await b.close();
  }
});
