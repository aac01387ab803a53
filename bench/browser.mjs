#!/usr/bin/env node
// Browser benchmark: serves the release build (dist/, built with --public-url
// /memscope/), opens headless Chromium, gives it generated snapshots through the file
// input (as a drop would) on a page open for SETTLE_MS (as when a user drags files onto
// an open page: its workers have compiled and warmed up), and reports, per input:
//   - first paint: from the files being handed over to the first timeline drawn,
//   - loaded: to every rank loaded and the timeline drawn (page marks `memscope:files`, `memscope:first-paint`,
//     `memscope:loaded`, read from performance entries),
//   - peak memory: the renderer process's resident memory (it holds the page's JS heap
//     and every worker's wasm memory), peak during the load minus before it, sampled
//     from /proc every 20 ms,
//   - frame times of scripted zoom and pan (W/S/A/D, each frame waited for with a pixel
//     read), median and p95 — relative figures only under SwiftShader,
//   - CPython's pickle.load of the same file (reference column),
//   - "cold": first paint and loaded again on a fresh page, the files handed over the
//     moment it is ready (workers still compiling and warming up; not for --large).
// Usage (after `./scripts/test` or a release build under /memscope/):
//   node bench/browser.mjs [--large] [--json out.json] [--only small,ranks8]
// Inputs come from bench/scale.py into /tmp/memscope-bench (generated when missing).

import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync, statSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve, browser } from '../tests/browser/harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const out = '/tmp/memscope-bench';
const args = process.argv.slice(2);
const flag = (name) => args.includes(name);
const value = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};

const base = join(here, '..', 'tests', 'fixtures', 'corpus', 'real', 'fullstep-19k-events-cpp-frames.pickle');
const inputs = [
  // The real snapshot the generated inputs are scaled from (6,770 allocations in the
  // trace): the reference for frame cost, which should not grow with allocations.
  { name: 'base', files: () => [base] },
  { name: 'small', preset: 'small', files: () => [join(out, 'small.pickle')] },
  { name: 'medium', preset: 'medium', files: () => [join(out, 'medium.pickle')] },
  { name: 'ranks8', preset: 'ranks8', files: () => readdirSync(join(out, 'ranks8')).filter((f) => f.endsWith('.pickle')).sort().map((f) => join(out, 'ranks8', f)) },
  // Two of those ranks: one file per core on this 2-core machine, as 8 ranks are on a
  // machine with 8 cores (the loads are CPU-bound; see bench/README.md).
  { name: 'ranks2', preset: 'ranks8', files: () => readdirSync(join(out, 'ranks8')).filter((f) => f.endsWith('.pickle')).sort().slice(0, 2).map((f) => join(out, 'ranks8', f)) },
  { name: 'large', preset: 'large', files: () => [join(out, 'large.pickle')], large: true },
];
const only = value('--only')?.split(',');
const chosen = inputs.filter((i) => (only ? only.includes(i.name) : !i.large || flag('--large')));

function ensure(input) {
  const present = (() => {
    try {
      return input.files().every((f) => existsSync(f));
    } catch {
      return false;
    }
  })();
  if (!present && input.preset) {
    console.error(`generating ${input.name} with bench/scale.py …`);
    execFileSync('python3', [join(here, 'scale.py'), '--preset', input.preset, '--out-dir', out], { stdio: 'inherit' });
  }
  return input.files();
}

/** Resident memory of Chromium's renderer processes, in bytes. */
function rendererRss() {
  let total = 0;
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!cmd.includes('chromium') || !cmd.includes('--type=renderer')) continue;
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] || 0);
      total += kb * 1024;
    } catch {
      // The process went away.
    }
  }
  return total;
}

function pickleLoadSeconds(files) {
  const script = 'import pickle,sys,time\nt=time.perf_counter()\nfor f in sys.argv[1:]:\n    pickle.load(open(f,"rb"))\nprint(time.perf_counter()-t)';
  try {
    return Number(execFileSync('python3', ['-c', script, ...files], { encoding: 'utf8', maxBuffer: 1 << 20 }).trim());
  } catch {
    return null;
  }
}

// How long the page is open before the files are dropped: a user takes longer than
// this to drag files onto it.
const SETTLE_MS = 3000;

/** Opens the page, drops `files` after `settleMs`, and waits for every rank. */
async function load(page, server, files, settleMs) {
  await page.goto(server.url);
  await page.waitForSelector('body[data-status="empty"]');
  await page.waitForTimeout(settleMs);
  const baseline = rendererRss();
  let peak = baseline;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rendererRss());
  }, 20);
  await page.setInputFiles('#file-input', files);
  await page.waitForFunction(() => performance.getEntriesByName('memscope:loaded').length > 0, null, {
    timeout: 600000,
    polling: 50,
  });
  clearInterval(sampler);
  peak = Math.max(peak, rendererRss());
  await page.waitForSelector('body[data-status="ready"]');
  const marks = await page.evaluate(() => {
    const t = (n) => performance.getEntriesByName(n)[0]?.startTime;
    return { files: t('memscope:files'), first: t('memscope:first-paint'), loaded: t('memscope:loaded') };
  });
  return {
    first_paint_ms: marks.first - marks.files,
    // Every rank loaded and the timeline drawn (with one file, the first paint comes
    // after the rank's load).
    loaded_ms: Math.max(marks.loaded, marks.first) - marks.files,
    baseline,
    peak,
  };
}

async function cold(server, input, files) {
  if (input.large) return null;
  const b = await browser();
  try {
    const { first_paint_ms, loaded_ms } = await load(b.page, server, files, 0);
    return { first_paint_ms, loaded_ms };
  } finally {
    await b.close();
  }
}

async function measure(server, input) {
  const files = ensure(input);
  const bytes = files.reduce((n, f) => n + statSync(f).size, 0);
  const b = await browser();
  try {
    const { page } = b;
    const loaded = await load(page, server, files, SETTLE_MS);
    const errors = await page.$$eval('[data-error]', (e) => e.map((x) => `${x.dataset.file}: ${x.dataset.error}`));
    // Scripted navigation: each step is one input event and one drawn frame (a pixel
    // read waits for the GPU).
    const frames = await page.evaluate(async () => {
      const canvas = document.getElementById('canvas');
      const probe = document.createElement('canvas').getContext('2d');
      const times = [];
      const keys = ['KeyW', 'KeyW', 'KeyW', 'KeyA', 'KeyD', 'KeyD', 'KeyS', 'KeyS', 'KeyS', 'KeyA'];
      for (let round = 0; round < 6; round++) {
        for (const code of keys) {
          const t = performance.now();
          document.dispatchEvent(new KeyboardEvent('keydown', { code, key: code.slice(3).toLowerCase(), bubbles: true }));
          probe.drawImage(canvas, 0, 0, 1, 1, 0, 0, 1, 1);
          probe.getImageData(0, 0, 1, 1);
          times.push(performance.now() - t);
          await new Promise((r) => requestAnimationFrame(r));
        }
      }
      times.sort((a, b) => a - b);
      return { median: times[Math.floor(times.length / 2)], p95: times[Math.floor(times.length * 0.95)], n: times.length };
    });
    const stats = await page.evaluate(() => window.memscope.stats());
    return {
      input: input.name,
      files: files.length,
      bytes,
      first_paint_ms: loaded.first_paint_ms,
      loaded_ms: loaded.loaded_ms,
      peak_memory_bytes: loaded.peak - loaded.baseline,
      peak_renderer_rss_bytes: loaded.peak,
      frame_ms_median: frames.median,
      frame_ms_p95: frames.p95,
      instances: stats.instances,
      allocations: stats.allocations,
      errors,
      cpython_pickle_load_s: flag('--no-cpython') ? null : pickleLoadSeconds(files),
    };
  } finally {
    await b.close();
  }
}

async function measureBoth(server, input) {
  const result = await measure(server, input);
  result.cold = await cold(server, input, input.files());
  return result;
}

const server = await serve();
const results = [];
try {
  for (const input of chosen) results.push(await measureBoth(server, input));
} finally {
  await server.close();
}
const mib = (b) => (b / 1048576).toFixed(1);
const baseFrame = results.find((r) => r.input === 'base')?.frame_ms_median;
for (const r of results) r.frame_vs_base = baseFrame ? r.frame_ms_median / baseFrame : null;
console.log('\ninput     files   MiB   allocations   first paint   loaded   peak MiB   frame med/p95 ms   ÷ base   instances   CPython load   cold: first paint / loaded');
for (const r of results) {
  console.log(
    `${r.input.padEnd(8)} ${String(r.files).padStart(5)} ${mib(r.bytes).padStart(6)} ${String(r.allocations).padStart(13)} ` +
      `${r.first_paint_ms.toFixed(0).padStart(10)} ms ${r.loaded_ms.toFixed(0).padStart(6)} ms ` +
      `${mib(r.peak_memory_bytes).padStart(9)}  ${r.frame_ms_median.toFixed(1).padStart(7)}/${r.frame_ms_p95.toFixed(1).padEnd(8)} ` +
      `${r.frame_vs_base == null ? '    -' : r.frame_vs_base.toFixed(2).padStart(6) + '×'} ` +
      `${String(r.instances).padStart(10)}   ${(r.cpython_pickle_load_s == null ? '-' : r.cpython_pickle_load_s.toFixed(2) + ' s').padStart(12)}   ` +
      (r.cold ? `${r.cold.first_paint_ms.toFixed(0)} / ${r.cold.loaded_ms.toFixed(0)} ms` : '-') +
      (r.errors.length ? `  ERRORS: ${r.errors.join('; ')}` : ''),
  );
}
const jsonPath = value('--json');
if (jsonPath) writeFileSync(jsonPath, JSON.stringify(results, null, 2));
