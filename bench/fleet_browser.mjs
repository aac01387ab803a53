#!/usr/bin/env node
// Browser benchmark of a whole job: many ranks in one page with bounded memory.
//
// Serves the release build (dist/, built with --public-url /memscope/), opens headless
// Chromium and measures:
//   1. N ranks (default 256 × ~12 MiB, bench/fleet.py) handed over through the file
//      input: time until every rank is reported and the Fleet view is ready, and the
//      browser's memory growth (resident memory of Chromium's renderer processes, which
//      hold the page's JS heap and every worker's wasm memory: peak minus before, sampled
//      every 50 ms), with the models held against the budget (`?model-budget-mib=`);
//   2. opening ranks afterwards: for each of OPEN_SAMPLES ranks whose model was dropped
//      (`.rank-card[data-held="false"]`), a click on its device until its timeline is
//      drawn (`body[data-device]` and `data-status="ready"`), and its peak checked
//      against the CLI (`memscope summary --json`) on the same file;
//   3. a report file of M ranks (default 1,024, from `memscope report` on the N files,
//      each record repeated under M/N rank names): time until the Fleet view is ready,
//      and the time of a sort of the overview (click → table redrawn).
//
// Usage (after a release build under /memscope/):
//   node bench/fleet_browser.mjs [--ranks 256] [--mib 12] [--report-ranks 1024]
//                                [--budget-mib 384] [--json out.json]
// Inputs are generated into /tmp/memscope-fleet-bench (never committed); the machine is
// shared, so figures are noisy: see bench/README.md for what was measured.

import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync, statSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve, browser } from '../tests/browser/harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const args = process.argv.slice(2);
const value = (name, d) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : d;
};
const RANKS = Number(value('--ranks', 256));
const MIB = Number(value('--mib', 12));
const REPORT_RANKS = Number(value('--report-ranks', 1024));
const BUDGET_MIB = value('--budget-mib');
const OPEN_SAMPLES = 5;
const out = '/tmp/memscope-fleet-bench';
const dir = join(out, `r${RANKS}-m${MIB}`);

function ensureRanks() {
  if (!existsSync(join(dir, 'manifest.json'))) {
    console.error(`generating ${RANKS} ranks of ~${MIB} MiB into ${dir} with bench/fleet.py …`);
    execFileSync('python3', [join(here, 'fleet.py'), '--ranks', String(RANKS), '--target-mib', String(MIB), '--iterations', '4', '--out', dir], {
      stdio: 'inherit',
    });
  }
  return readdirSync(dir)
    .filter((f) => f.endsWith('.pickle'))
    .sort()
    .map((f) => join(dir, f));
}

function cli(...a) {
  const r = spawnSync('cargo', ['run', '--release', '-q', '-p', 'memscope-cli', '--', ...a], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 1 << 30,
  });
  if (r.status !== 0) throw new Error(`memscope ${a[0]}: ${r.stderr}`);
  return r.stdout;
}

/** A report file of `m` ranks: the N files' records, repeated under new rank names. */
function ensureReport(files, m) {
  const path = join(out, `job-${RANKS}x${MIB}-as-${m}.memscope.jsonl`);
  if (existsSync(path)) return path;
  const lines = cli('report', ...files).split('\n').filter((l) => l.trim());
  const records = lines.map((l) => JSON.parse(l)).filter((r) => r.kind === 'rank');
  const outLines = [];
  for (let i = 0; i < m; i++) {
    const r = structuredClone(records[i % records.length]);
    const node = Math.floor(i / 8);
    const name = `node${String(node).padStart(3, '0')}/rank${i}.pickle`;
    r.report.facts.figures.id.path = name;
    r.report.facts.figures.id.file = `rank${i}.pickle`;
    r.report.facts.figures.id.rank = i;
    outLines.push(JSON.stringify(r));
  }
  writeFileSync(path, outLines.join('\n') + '\n');
  return path;
}

/** Resident memory of Chromium's renderer processes, in bytes. */
function rendererRss() {
  let total = 0;
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!cmd.includes('chromium') || !cmd.includes('--type=renderer')) continue;
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      total += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] || 0) * 1024;
    } catch {
      // The process went away.
    }
  }
  return total;
}

const mib = (b) => (b / 1048576).toFixed(0);

async function ranksRun(server, files) {
  const b = await browser();
  try {
    const { page } = b;
    const query = BUDGET_MIB === undefined ? '' : `?model-budget-mib=${BUDGET_MIB}`;
    await page.goto(`${server.url}${query}`);
    await page.waitForSelector('body[data-status="empty"]');
    await page.waitForTimeout(3000);
    const baseline = rendererRss();
    let peak = baseline;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rendererRss());
    }, 50);
    const t0 = Date.now();
    await page.setInputFiles('#file-input', files);
    await page.waitForFunction(
      (n) => document.querySelectorAll('#ranks .device[data-peak-allocated-bytes]').length >= n,
      files.length,
      { timeout: 3600000, polling: 500 },
    );
    const loadedMs = Date.now() - t0;
    await page.click('#view-fleet');
    await page.waitForFunction(
      (n) =>
        document.querySelector('#fleet')?.dataset.status === 'ready' &&
        document.querySelectorAll('#fleet-overview tr[data-action="focus-rank"]').length === n,
      files.length,
      { timeout: 3600000, polling: 500 },
    );
    const reportedMs = Date.now() - t0;
    clearInterval(sampler);
    peak = Math.max(peak, rendererRss());
    const dropped = await page.$$eval('.rank-card[data-held="false"]', (c) => c.map((x) => Number(x.dataset.key)));
    const held = files.length - dropped.length;
    // Opening ranks whose models were dropped.
    const opens = [];
    for (const key of dropped.filter((_, i) => i % Math.max(1, Math.floor(dropped.length / OPEN_SAMPLES)) === 0).slice(0, OPEN_SAMPLES)) {
      const t = Date.now();
      await page.click(`.rank-card[data-key="${key}"] .device`);
      await page.waitForFunction(
        (k) => document.body.dataset.device === `${k}:0` && document.body.dataset.status === 'ready' && document.querySelector(`.rank-card[data-key="${k}"]`)?.dataset.held === 'true',
        key,
        { timeout: 60000, polling: 10 },
      );
      const ms = Date.now() - t;
      const name = await page.getAttribute(`.rank-card[data-key="${key}"]`, 'data-file').catch(() => null);
      const peakShown = Number(await page.getAttribute(`.rank-card[data-key="${key}"] .device`, 'data-peak-allocated-bytes'));
      opens.push({ key, name, ms, peakShown });
    }
    const afterOpens = rendererRss();
    return {
      ranks: files.length,
      bytes: files.reduce((n, f) => n + statSync(f).size, 0),
      loaded_ms: loadedMs,
      reported_ms: reportedMs,
      memory_growth_bytes: Math.max(peak, afterOpens) - baseline,
      held_after: held,
      opens,
    };
  } finally {
    await b.close();
  }
}

async function reportRun(server, path, m) {
  const b = await browser();
  try {
    const { page } = b;
    await page.goto(server.url);
    await page.waitForSelector('body[data-status="empty"]');
    const t0 = Date.now();
    await page.setInputFiles('#file-input', path);
    await page.waitForFunction(
      (n) =>
        document.querySelector('#fleet')?.dataset.status === 'ready' &&
        document.querySelectorAll('#fleet-overview tr[data-action="focus-rank"]').length === n,
      m,
      { timeout: 600000, polling: 50 },
    );
    const readyMs = Date.now() - t0;
    const sorts = [];
    for (const col of ['peak-allocated', 'peak-allocated', 'events']) {
      const button = page.locator(`#fleet-overview button[data-col="${col}"]`).first();
      if ((await button.count()) === 0) continue;
      const t = Date.now();
      await button.click();
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
      sorts.push(Date.now() - t);
    }
    return { ranks: m, ready_ms: readyMs, sort_ms: sorts };
  } finally {
    await b.close();
  }
}

const files = ensureRanks();
const server = await serve();
let result;
try {
  const ranks = await ranksRun(server, files);
  for (const o of ranks.opens) {
    const file = files.find((f) => f.endsWith(`/${o.name}`));
    if (!file) continue;
    const s = JSON.parse(cli('summary', '--json', file).split('\n').find((l) => l.trim()));
    o.peakExpected = s.peak_allocated_bytes;
  }
  const report = await reportRun(server, ensureReport(files, REPORT_RANKS), REPORT_RANKS);
  result = { ranks, report };
} finally {
  await server.close();
}
const r = result.ranks;
console.log(`\n${r.ranks} ranks, ${mib(r.bytes)} MiB of files${BUDGET_MIB === undefined ? '' : `, budget ${BUDGET_MIB} MiB`}:`);
console.log(`  every rank read: ${(r.loaded_ms / 1000).toFixed(1)} s; every rank reported, fleet ready: ${(r.reported_ms / 1000).toFixed(1)} s`);
console.log(`  browser memory growth: ${mib(r.memory_growth_bytes)} MiB (target ≤ 1536); models held at the end: ${r.held_after}`);
for (const o of r.opens) {
  const ok = o.peakExpected === undefined ? '' : o.peakShown === o.peakExpected ? ' peak = CLI' : ` PEAK ${o.peakShown} ≠ CLI ${o.peakExpected}`;
  console.log(`  open dropped rank ${o.name ?? o.key}: ${o.ms} ms (target ≤ 1000)${ok}`);
}
const p = result.report;
console.log(`report file of ${p.ranks} ranks: fleet ready ${(p.ready_ms / 1000).toFixed(1)} s; overview sorts ${p.sort_ms.join(', ')} ms`);
const jsonPath = value('--json');
if (jsonPath) writeFileSync(jsonPath, JSON.stringify(result, null, 2));
