#!/usr/bin/env node
// Lens benchmark: how long the linked views take to follow the moment, in headless
// Chromium on the release build (dist/, built with --public-url /memscope/).
//
// On a generated input (default: the ~12 MiB `small` preset), steps the moment 20
// times with → and clicks the ruler at 10 moments far apart, and reports, from the
// page's own measures (`memscope:lens:*`), request → drawn for the allocator state at
// the moment and for the flame graph (median, p90, max), split into the worker's share
// and the page's. The target (issue 4) is a median under 100 ms on the ~12 MiB input.
// Usage:
//   node bench/lenses.mjs [--preset small|medium] [--json out.json]

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
const preset = value('--preset') || 'small';
const file = join(out, `${preset}.pickle`);
if (!existsSync(file)) {
  console.error(`generating ${preset} with bench/scale.py …`);
  execFileSync('python3', [join(here, 'scale.py'), '--preset', preset, '--out-dir', out], { stdio: 'inherit' });
}

const lens = (page) => page.evaluate(() => window.memscope.lenses());
const server = await serve();
const b = await browser();
let report;
try {
  const { page, errors } = b;
  await page.goto(server.url);
  await page.waitForSelector('body[data-status="empty"]');
  await page.setInputFiles('#file-input', file);
  await page.waitForSelector('body[data-status="ready"]', { timeout: 300000 });
  await page.waitForFunction(() => window.memscope.lenses().moment !== null, null, { timeout: 120000 });
  await page.click('#tab-flame');
  await page.waitForFunction(() => window.memscope.lenses().flame.nodes > 0, null, { timeout: 120000 });
  const first = (await lens(page)).timings.length;
  // Step the moment entry by entry, each time until the state and the flame are drawn.
  await page.click('#moment-summary');
  for (let i = 0; i < 20; i++) {
    const m = (await lens(page)).moment;
    await page.keyboard.press('ArrowRight');
    await page.waitForFunction((m) => {
      const l = window.memscope.lenses();
      return l.moment === m + 1 && l.flame.moment === m + 1;
    }, m);
  }
  // Clicks on the ruler at moments far apart.
  const ruler = await page.$eval('#x-axis', (e) => {
    const r = e.getBoundingClientRect();
    return { x: r.left, y: r.top, w: r.width, h: r.height };
  });
  for (let i = 0; i < 10; i++) {
    const before = (await lens(page)).timings.length;
    await page.mouse.click(ruler.x + ruler.w * (0.05 + 0.09 * i), ruler.y + ruler.h / 2);
    await page.waitForFunction((n) => {
      const l = window.memscope.lenses();
      return l.timings.length >= n + 2 && l.flame.moment === l.moment;
    }, before);
  }
  const timings = (await lens(page)).timings.slice(first);
  const of = (what) => timings.filter(([w]) => w === what).map(([, ms]) => ms).sort((a, b) => a - b);
  const stats = (xs) => ({ n: xs.length, median: xs[Math.floor(xs.length / 2)], p90: xs[Math.floor(xs.length * 0.9)], max: xs[xs.length - 1] });
  report = { file, errors };
  for (const what of ['state', 'state-worker', 'state-page', 'flame', 'flame-worker', 'flame-page']) report[what] = stats(of(what));
} finally {
  await b.close();
  await server.close();
}
const ms = (x) => `${x.toFixed(1)} ms`.padStart(9);
console.log(`\n${preset}: request → drawn (n, median, p90, max); target: median < 100 ms`);
for (const what of ['state', 'state-worker', 'state-page', 'flame', 'flame-worker', 'flame-page']) {
  const s = report[what];
  console.log(`${what.padEnd(13)} ${String(s.n).padStart(3)} ${ms(s.median)} ${ms(s.p90)} ${ms(s.max)}`);
}
if (report.errors.length) console.log('page errors:', report.errors.join('; '));
const jsonPath = value('--json');
if (jsonPath) writeFileSync(jsonPath, JSON.stringify(report, null, 2));
