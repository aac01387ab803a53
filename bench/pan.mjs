// browser.mjs's pan steps on one input, each split into its key handler and its pixel
// read (which waits for the GPU process to execute what was queued), with the number of
// layouts the worker answered meanwhile and their median time (the timeline canvas's
// `data-layout-ms`); optionally a Chrome trace of the steps (no V8 sampler: the steps
// are what is timed).
//
//   node bench/pan.mjs [--rounds 6] [--trace trace.json] FILE...
//
// The page is open 2 s before the files are handed over and 3 s after they are loaded,
// as a user's page would be.

import { writeFileSync } from 'node:fs';
import { serve, browser } from '../tests/browser/harness.mjs';

const args = process.argv.slice(2);
const option = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args.splice(i, 2)[1] : undefined;
};
const traceOut = option('--trace');
const rounds = Number(option('--rounds') ?? 6);
const files = args;
if (files.length === 0) {
  console.error('usage: node bench/pan.mjs [--rounds N] [--trace trace.json] FILE...');
  process.exit(2);
}

const server = await serve();
const b = await browser();
const { page } = b;
await page.goto(server.url);
await page.waitForSelector('body[data-status="empty"]');
await page.waitForTimeout(2000);
await page.setInputFiles('#file-input', files);
await page.waitForFunction(() => performance.getEntriesByName('memscope:loaded').length > 0, null, {
  timeout: 600000,
  polling: 50,
});
await page.waitForSelector('body[data-status="ready"]');
await page.waitForTimeout(3000);

let cdp;
const events = [];
let complete;
if (traceOut) {
  cdp = await b.context.newCDPSession(page);
  cdp.on('Tracing.dataCollected', (e) => events.push(...e.value));
  complete = new Promise((resolve) => cdp.on('Tracing.tracingComplete', resolve));
  const categories = 'devtools.timeline,disabled-by-default-devtools.timeline,blink.user_timing,v8,toplevel,gpu';
  await cdp.send('Tracing.start', { categories, transferMode: 'ReportEvents' });
}

const result = await page.evaluate(async (rounds) => {
  const canvas = document.getElementById('canvas');
  const probe = document.createElement('canvas').getContext('2d');
  const handler = [];
  const read = [];
  const step = [];
  const layouts = [];
  let lastLayout = canvas.dataset.layoutMs;
  const keys = ['KeyW', 'KeyW', 'KeyW', 'KeyA', 'KeyD', 'KeyD', 'KeyS', 'KeyS', 'KeyS', 'KeyA'];
  for (let round = 0; round < rounds; round++) {
    for (const code of keys) {
      const t0 = performance.now();
      document.dispatchEvent(new KeyboardEvent('keydown', { code, key: code.slice(3).toLowerCase(), bubbles: true }));
      const t1 = performance.now();
      probe.drawImage(canvas, 0, 0, 1, 1, 0, 0, 1, 1);
      probe.getImageData(0, 0, 1, 1);
      const t2 = performance.now();
      handler.push(t1 - t0);
      read.push(t2 - t1);
      step.push(t2 - t0);
      await new Promise((r) => requestAnimationFrame(r));
      if (canvas.dataset.layoutMs !== lastLayout) {
        lastLayout = canvas.dataset.layoutMs;
        layouts.push(Number(lastLayout));
      }
    }
  }
  const at = (values, q) => [...values].sort((a, b) => a - b)[Math.floor(values.length * q)];
  return {
    steps: step.length,
    step_ms_median: at(step, 0.5),
    step_ms_p95: at(step, 0.95),
    handler_ms_median: at(handler, 0.5),
    read_ms_median: at(read, 0.5),
    layouts_answered: layouts.length,
    layout_ms_median: layouts.length ? at(layouts, 0.5) : null,
    instances: window.memscope.stats().instances,
  };
}, rounds);
console.log(JSON.stringify(result));

if (traceOut) {
  await cdp.send('Tracing.end');
  await complete;
  writeFileSync(traceOut, JSON.stringify({ traceEvents: events }));
}
await b.close();
await server.close();
