import { join } from 'node:path';
import { readdirSync } from 'node:fs';
import { serve, browser, fixtures } from './harness.mjs';
const server = await serve();
const files = process.argv.length > 2 ? process.argv.slice(2) : readdirSync(join(fixtures, 'corpus', 'real')).map((f) => join(fixtures, 'corpus', 'real', f));
for (const file of files) {
  const b = await browser();
  const { page, errors } = b;
  const t0 = Date.now();
  try {
    await page.goto(server.url);
    await page.waitForSelector('body[data-status="empty"]');
    await page.setInputFiles('#file-input', file);
    await page.waitForSelector('body[data-status="ready"]', { timeout: 180000 });
    await page.waitForFunction(() => window.memscope.lenses && window.memscope.lenses().moment !== null, null, { timeout: 120000 });
    const tLoad = Date.now() - t0;
    const devices = await page.$$eval('.device', (ds) => ds.map((d) => d.dataset.device));
    const long = [];
    await page.evaluate(() => {
      window.__long = [];
      new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__long.push(e.duration); }).observe({ type: 'longtask', buffered: false });
    });
    for (const d of devices) {
      await page.click(`.device[data-device="${d}"]`);
      await page.waitForFunction(() => window.memscope.lenses().moment !== null, null, { timeout: 60000 });
      for (const tab of ['segments', 'lanes', 'flame', 'table', 'events', 'pools', 'settings']) {
        await page.click(`#tab-${tab}`);
        await page.waitForTimeout(400);
        const c = await page.$(`#lens-${tab}-pane canvas`);
        if (c) {
          const box = await c.boundingBox();
          if (box && box.width > 10) {
            await page.mouse.move(box.x + box.width * 0.5, box.y + 10);
            await page.mouse.click(box.x + box.width * 0.5, box.y + 10);
          }
        }
      }
      await page.click('#moment-summary');
      for (let i = 0; i < 5; i++) await page.keyboard.press('ArrowRight');
      await page.fill('#search', 'forward');
      await page.waitForTimeout(300);
      await page.fill('#search', '');
    }
    await page.waitForTimeout(500);
    const l = await page.evaluate(() => ({ lens: window.memscope.lenses(), long: window.__long }));
    const t = l.lens.timings.filter(([w]) => w === 'state' || w === 'flame').map(([w, ms]) => `${w}:${ms.toFixed(0)}`);
    console.log(file.split('/').pop(), 'devices', devices.join(','), 'load ms', tLoad, 'longtasks', l.long.map((x) => x.toFixed(0)).join(','), 'timings', t.slice(-6).join(' '), 'errors', JSON.stringify(errors));
  } catch (e) {
    console.log(file.split('/').pop(), 'FAILED', String(e).slice(0, 300), JSON.stringify(errors));
    await page.screenshot({ path: '/tmp/lens-scratch/fail-' + file.split('/').pop() + '.png' });
  } finally {
    await b.close();
  }
}
await server.close();
