#!/usr/bin/env node
// What-if benchmark: the allocator replay in the rank worker, in headless Chromium on
// the release build (dist/, built with --public-url /memscope/).
//
// On a generated input (default: the ~120 MiB `medium` preset), opens the settings tab
// (the standard what-ifs), then asks again with a 40 GiB capacity, and prints the
// worker's own times: preparing the device once, then each configuration's replay.
// The target (issue 16) is ≤ 1 s per configuration in the worker on ~120 MiB.
// Usage:
//   node bench/whatif.mjs [--preset small|medium] [--json out.json]

import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve, browser } from '../tests/browser/harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const out = '/tmp/memscope-bench';
const args = process.argv.slice(2);
const value = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const preset = value('--preset') || 'medium';
const file = join(out, `${preset}.pickle`);
if (!existsSync(file)) {
  console.error(`generating ${preset} with bench/scale.py …`);
  execFileSync('python3', [join(here, 'scale.py'), '--preset', preset, '--out-dir', out], { stdio: 'inherit' });
}

const table = (page) => page.evaluate(() => ({
  prepare_ms: Number(document.getElementById('whatif-check').dataset.prepareMs),
  rows: [...document.querySelectorAll('#whatif-table tr[data-config]')].map((r) => ({
    config: r.dataset.config,
    replay_ms: Number(r.dataset.replayMs),
    peak_reserved_bytes: Number(r.dataset.peakReservedBytes),
    ooms: Number(r.dataset.ooms),
  })),
}));

const server = await serve();
const b = await browser();
const report = { file, runs: [] };
try {
  const { page, errors } = b;
  await page.goto(server.url);
  await page.waitForSelector('body[data-status="empty"]');
  await page.setInputFiles('#file-input', file);
  await page.waitForSelector('body[data-status="ready"]', { timeout: 300000 });
  await page.waitForFunction(() => window.memscope.lenses().moment !== null, null, { timeout: 120000 });
  await page.click('#tab-settings');
  await page.waitForSelector('#whatif-table tr[data-config]', { timeout: 300000 });
  report.runs.push(await table(page));
  await page.fill('#whatif-capacity', '40GiB');
  await page.click('#whatif-run');
  await page.waitForFunction(() => document.querySelector('#whatif-table tr[data-config]')?.dataset.config.includes('capacity'), null, { timeout: 300000 });
  report.runs.push(await table(page));
  report.errors = errors;
} finally {
  await b.close();
  await server.close();
}
console.log(`\n${preset}: the allocator replay in the worker; target ≤ 1 s per configuration`);
for (const run of report.runs) {
  console.log(`  prepare (once per device)              ${run.prepare_ms.toFixed(1).padStart(8)} ms`);
  for (const r of run.rows) {
    console.log(`  ${r.config.padEnd(38)} ${r.replay_ms.toFixed(1).padStart(8)} ms  (${r.ooms} OOMs)`);
  }
}
if (report.errors.length) console.log('page errors:', report.errors);
const json = value('--json');
if (json) writeFileSync(json, JSON.stringify(report, null, 2));
