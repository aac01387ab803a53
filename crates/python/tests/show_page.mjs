// Opens the HTML a notebook cell output (memscope.show) in headless Chromium, as a
// notebook front end would render it, and waits until the page in its iframe has
// loaded the snapshot handed over by postMessage. Prints the rank card's data
// attributes as JSON; saves a screenshot to SCREENSHOT if set.
//   node show_page.mjs OUTPUT.html FILE_NAME
import { pathToFileURL } from 'node:url';
import { browser } from '../../../tests/browser/harness.mjs';

const [html, name] = process.argv.slice(2);
const b = await browser();
try {
  await b.page.goto(pathToFileURL(html).href);
  const frame = await (await b.page.waitForSelector('iframe')).contentFrame();
  const sel = `.device[data-file="${name}"][data-device="0"][data-peak-allocated-bytes]`;
  await frame.waitForSelector(sel, { timeout: 60000 });
  await frame.waitForSelector('body[data-status="ready"]', { timeout: 60000 });
  const card = await frame.$eval(sel, (e) => ({ ...e.dataset }));
  const status = await b.page.$eval('.memscope-show [id$="-status"]', (e) => e.textContent);
  if (process.env.SCREENSHOT) await b.page.screenshot({ path: process.env.SCREENSHOT });
  console.log(JSON.stringify({ card, status, errors: b.errors }));
} finally {
  await b.close();
}
