// Loads FILES from two or more dists served in turns, ROUNDS times each, a fresh browser
// per load, and prints each dist's median: loaded = the later of the page's
// `memscope:loaded` and `memscope:first-paint` marks after `memscope:files`, as
// bench/browser.mjs reads them. Taking the builds in turns is what makes a ratio
// between them mean something on a shared machine.
//
//   node bench/ab.mjs [--cold] ROUNDS DIST_A DIST_B... -- FILE...

import { resolve } from 'node:path';
import { serve, browser } from '../tests/browser/harness.mjs';

const args = process.argv.slice(2);
const cold = args[0] === '--cold';
if (cold) args.shift();
const rounds = Number(args[0]);
const sep = args.indexOf('--');
const dists = args.slice(1, sep);
const files = args.slice(sep + 1);
if (!(rounds > 0) || sep < 0 || dists.length === 0 || files.length === 0) {
  console.error('usage: node bench/ab.mjs [--cold] ROUNDS DIST... -- FILE...');
  process.exit(2);
}
const servers = await Promise.all(dists.map((d) => serve(resolve(d))));
const loaded = dists.map(() => []);
for (let round = 0; round < rounds; round++) {
  for (const [k, server] of servers.entries()) {
    const b = await browser();
    const { page } = b;
    await page.goto(server.url);
    await page.waitForSelector('body[data-status="empty"]');
    if (!cold) await page.waitForTimeout(3000);
    await page.setInputFiles('#file-input', files);
    await page.waitForFunction(
      () => ['memscope:loaded', 'memscope:first-paint'].every((n) => performance.getEntriesByName(n).length > 0),
      null,
      { timeout: 600000, polling: 50 },
    );
    const ms = await page.evaluate(() => {
      const t = (n) => performance.getEntriesByName(n)[0].startTime;
      return Math.max(t('memscope:loaded'), t('memscope:first-paint')) - t('memscope:files');
    });
    loaded[k].push(Math.round(ms));
    await b.close();
  }
}
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
for (const [k, dist] of dists.entries()) {
  console.log(`${dist}: median ${median(loaded[k])} ms (runs ${loaded[k].join(', ')})`);
}
for (const server of servers) await server.close();
