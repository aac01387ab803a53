// `./scripts/serve` (issue 12, interaction 8): the dev server serves the page without
// a Content-Security-Policy violation: no injected live-reload script (Trunk.toml's
// [serve] turns it off; the page's policy allows inline scripts only by hash), and the
// bundled example loads through its workers under the same policy.
//
// It runs exactly `./scripts/serve`, on a free port and into a scratch dist (the other
// tests' dist/ stays as built), so it pays for one release build of the page: cargo is
// already built by then (scripts/test builds dist/ first), the cost is wasm-bindgen
// and wasm-opt of both modules.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { browser, root, screenshot } from './harness.mjs';

/** A port nothing listens on now. */
async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Polls `url` until it answers 200 (the first build is done), or the server exits. */
async function ready(url, child, log, limitMs) {
  const until = Date.now() + limitMs;
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`scripts/serve exited ${child.exitCode}:\n${log.join('')}`);
    try {
      const r = await fetch(url);
      if (r.ok) return r.text();
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`scripts/serve did not answer within ${limitMs / 1000} s:\n${log.slice(-20).join('')}`);
}

test('./scripts/serve serves the page and the example with no Content-Security-Policy violation', async (t) => {
  const port = await freePort();
  const dist = await mkdtemp(join(tmpdir(), 'memscope-serve-'));
  const log = [];
  // Its own process group, to stop trunk and whatever it started.
  const child = spawn(join(root, 'scripts', 'serve'), ['--port', String(port), '--dist', dist], {
    cwd: root,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (d) => log.push(String(d)));
  child.stderr.on('data', (d) => log.push(String(d)));
  const started = Date.now();
  let b;
  try {
    const url = `http://127.0.0.1:${port}/`;
    const html = await ready(url, child, log, 600_000);
    const built = (Date.now() - started) / 1000;
    // The page's own scripts only: the CSP bootstrap, the early drop handler, the module.
    const scripts = html.match(/<script\b[^>]*>/g) || [];
    assert.equal(scripts.length, 3, scripts.join(' '));
    assert.ok(!/autoreload|__trunk|new WebSocket/i.test(html), 'no live-reload script');

    b = await browser();
    const { page, errors } = b;
    const warnings = [];
    page.on('console', (m) => {
      if (/Content.Security.Policy|Refused to/i.test(m.text())) warnings.push(`${m.type()}: ${m.text()}`);
    });
    // Violations as the browser reports them to the page (from the first script on).
    await page.addInitScript(() => {
      window.__violations = [];
      document.addEventListener('securitypolicyviolation', (e) => {
        window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`);
      });
    });
    await page.goto(url);
    await page.waitForSelector('body[data-status="empty"]', { timeout: 30000 });
    // The bundled example: the workers start and read it (worker-src, connect-src).
    await page.goto(`${url}#example`);
    await page.waitForSelector('body[data-status="ready"]', { timeout: 60000 });
    await page.waitForSelector('.device[data-peak-allocated-bytes]', { timeout: 60000 });
    await screenshot(page, 'serve-example');
    assert.deepEqual(await page.evaluate(() => window.__violations), []);
    assert.deepEqual(warnings, []);
    assert.deepEqual(errors, []);
    t.diagnostic(`scripts/serve's first build took ${built.toFixed(0)} s`);
  } finally {
    if (b) await b.close();
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {
      // Already gone.
    }
    await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)));
    await rm(dist, { recursive: true, force: true });
  }
});
