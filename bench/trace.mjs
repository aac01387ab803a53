// Records a Chrome trace of one load of FILES (DevTools protocol, V8's sampling profiler
// on every thread) and writes it for bench/trace_report.py; prints the page's marks and
// the rank cards' timings. Build a dist that keeps the wasm names to read functions:
// index.html with data-keep-debug and data-wasm-opt="0" on both rust links, built with
// `trunk build --release --offline --public-url /memscope/ --dist DIR`.
//
//   MEMSCOPE_DIST=DIR node bench/trace.mjs [--cold] [--out trace.json] FILE...
//
// Without --cold the page is open 3 s before the files are handed over (as
// bench/browser.mjs's warm load); with it, they are handed over once the page is ready,
// and the trace starts before navigation.

import { writeFileSync } from 'node:fs';
import { serve, browser } from '../tests/browser/harness.mjs';

const args = process.argv.slice(2);
const cold = args.includes('--cold');
const outAt = args.indexOf('--out');
const out = outAt >= 0 ? args[outAt + 1] : 'trace.json';
const files = args.filter((a, i) => !a.startsWith('--') && (outAt < 0 || i !== outAt + 1));
const categories = [
  'devtools.timeline',
  'disabled-by-default-devtools.timeline',
  'blink.user_timing',
  'v8',
  'v8.wasm',
  'toplevel',
  'disabled-by-default-v8.cpu_profiler',
].join(',');

const server = await serve();
const b = await browser();
const { page } = b;
const cdp = await b.context.newCDPSession(page);
const events = [];
cdp.on('Tracing.dataCollected', (e) => events.push(...e.value));
const complete = new Promise((resolve) => cdp.on('Tracing.tracingComplete', resolve));
if (cold) await cdp.send('Tracing.start', { categories, transferMode: 'ReportEvents' });
await page.goto(server.url);
await page.waitForSelector('body[data-status="empty"]');
if (!cold) {
  await page.waitForTimeout(3000);
  await cdp.send('Tracing.start', { categories, transferMode: 'ReportEvents' });
}
await page.setInputFiles('#file-input', files);
await page.waitForFunction(
  () => ['memscope:loaded', 'memscope:first-paint'].every((n) => performance.getEntriesByName(n).length > 0),
  null,
  { timeout: 600000, polling: 50 },
);
await page.waitForTimeout(300);
const marks = await page.evaluate(() =>
  performance.getEntriesByType('mark').map((m) => [m.name, m.startTime]),
);
const timings = await page.evaluate(() =>
  [...document.querySelectorAll('[data-timings]')].map((e) => e.getAttribute('data-timings')),
);
await cdp.send('Tracing.end');
await complete;
writeFileSync(out, JSON.stringify({ traceEvents: events }));
const files0 = marks.find(([n]) => n === 'memscope:files')?.[1] ?? 0;
for (const [name, t] of marks) if (name.startsWith('memscope')) console.log(`${name.padEnd(28)} ${(t - files0).toFixed(1)} ms`);
for (const t of timings) console.log(t);
console.log(`trace written to ${out}`);
await b.close();
await server.close();
