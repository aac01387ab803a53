// Shared set-up for memscope's browser tests: a static server for the release build
// (served under /memscope/, as GitHub Pages serves it) and headless Debian Chromium
// driven by playwright-core. Tests wait for DOM markers the app sets (data-status,
// data-peak-allocated-bytes, data-error), never for fixed delays.

import { createServer } from 'node:http';
import { readFile, mkdtemp, mkdir, rm, stat } from 'node:fs/promises';
import { readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, extname, normalize, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const root = normalize(join(dirname(fileURLToPath(import.meta.url)), '..', '..'));
export const dist = process.env.MEMSCOPE_DIST || join(root, 'dist');
export const fixtures = join(root, 'tests', 'fixtures');
export const artifacts = join(root, 'tests', 'browser', 'artifacts');
export const prefix = '/memscope/';

const types = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.webmanifest': 'application/manifest+json',
};

/**
 * Serves `dist` under `prefix` on a free port; resolves to { url, close, requests,
 * served }. `served` lists { path, status, bytes } (body bytes sent). Like GitHub Pages,
 * files carry an ETag and a matching If-None-Match is answered 304 without a body.
 */
export async function serve(dir = dist) {
  const requests = [];
  const served = [];
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    requests.push(path);
    if (!path.startsWith(prefix)) {
      res.writeHead(404).end('not under ' + prefix);
      return;
    }
    let file = normalize(join(dir, path.slice(prefix.length)));
    if (!file.startsWith(dir)) {
      res.writeHead(403).end();
      return;
    }
    try {
      if ((await stat(file)).isDirectory()) file = join(file, 'index.html');
      const info = await stat(file);
      const etag = `"${info.size.toString(16)}-${Math.floor(info.mtimeMs).toString(16)}"`;
      if (req.headers['if-none-match'] === etag) {
        served.push({ path, status: 304, bytes: 0 });
        res.writeHead(304, { etag, 'cache-control': 'no-cache' }).end();
        return;
      }
      const body = await readFile(file);
      served.push({ path, status: 200, bytes: body.length });
      res.writeHead(200, {
        'content-type': types[extname(file)] || 'application/octet-stream',
        'cache-control': 'no-cache',
        etag,
      });
      res.end(body);
    } catch {
      res.writeHead(404).end('not found');
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}${prefix}`,
    requests,
    served,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** A fresh headless Chromium with WebGL2 through SwiftShader. */
export async function browser(extraArgs = [], options = {}) {
  const profile = await mkdtemp(join(tmpdir(), 'memscope-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1400, height: 860 },
    deviceScaleFactor: options.deviceScaleFactor || 1,
    args: [
      '--no-sandbox',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--use-angle=swiftshader',
      '--enable-unsafe-swiftshader',
      '--ignore-gpu-blocklist',
      ...extraArgs,
    ],
  });
  const page = context.pages()[0] || (await context.newPage());
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  return {
    context,
    page,
    errors,
    profile,
    close: async () => {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/** Saves a screenshot under tests/browser/artifacts/. */
export async function screenshot(page, name) {
  await mkdir(artifacts, { recursive: true });
  const path = join(artifacts, `${name}.png`);
  await page.screenshot({ path });
  return path;
}

/**
 * Drops files on the page as a user would: a synthetic drop event whose DataTransfer
 * holds the files' bytes (read here, in Node).
 */
export async function dropFiles(page, paths) {
  const files = [];
  for (const p of paths) {
    // Base64: an array of numbers this size takes seconds to hand over.
    files.push({ name: p.split('/').pop(), base64: (await readFile(p)).toString('base64') });
  }
  await page.evaluate((files) => {
    const dt = new DataTransfer();
    for (const f of files) {
      const text = atob(f.base64);
      const bytes = new Uint8Array(text.length);
      for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
      dt.items.add(new File([bytes], f.name));
    }
    document.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
    document.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, files);
}

/** Reference summaries (from CPython, tests/reference/summary.py) by file and device. */
export async function reference() {
  const text = await readFile(join(fixtures, 'expected', 'corpus.jsonl'), 'utf8');
  const out = new Map();
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const o = JSON.parse(line);
    out.set(`${o.file}#${o.device ?? ''}`, o);
  }
  return out;
}

/** Counts canvas pixels that differ from the background (reads the drawing buffer). */
export async function paintedPixels(page) {
  return page.evaluate(() => {
    const canvas = document.getElementById('canvas');
    const copy = document.createElement('canvas');
    copy.width = canvas.width;
    copy.height = canvas.height;
    const ctx = copy.getContext('2d');
    ctx.drawImage(canvas, 0, 0);
    const data = ctx.getImageData(0, 0, copy.width, copy.height).data;
    const [r0, g0, b0] = [data[0], data[1], data[2]];
    let painted = 0;
    for (let i = 0; i < data.length; i += 4) {
      if (Math.abs(data[i] - r0) + Math.abs(data[i + 1] - g0) + Math.abs(data[i + 2] - b0) > 24) painted++;
    }
    return { painted, total: copy.width * copy.height };
  });
}

/** Where allocation `id` is drawn on the memory timeline (client px), once the strips
 * drawn are the current view's own (not an older view's seen through a new mapping). */
export async function locate(page, id) {
  await page.waitForFunction((i) => window.memscope.stats().settled && window.memscope.locate(i), id);
  return page.evaluate((i) => window.memscope.locate(i), id);
}

/**
 * Resident memory of Chromium's renderer processes, in bytes (for the browser benches).
 * Given `profile` (what `browser()` returns), only the renderers of that browser: the
 * machine is shared, and other browsers' renderers come and go during a measurement.
 */
export function rendererRss(profile) {
  const pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  const cmdline = (pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      return '';
    }
  };
  const parent = (pid) => {
    try {
      // Field 4 of /proc/PID/stat, after the command name in parentheses.
      return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[1];
    } catch {
      return '0';
    }
  };
  const roots = new Set(
    profile === undefined
      ? []
      : pids.filter((pid) => {
          const cmd = cmdline(pid);
          return cmd.includes(`--user-data-dir=${profile}`) && !cmd.includes('--type=');
        }),
  );
  const ours = (pid) => {
    for (let p = pid, hops = 0; p !== '0' && p !== '1' && hops < 16; p = parent(p), hops++) {
      if (roots.has(p)) return true;
    }
    return false;
  };
  let total = 0;
  for (const pid of pids) {
    try {
      const cmd = cmdline(pid);
      if (!cmd.includes('chromium') || !cmd.includes('--type=renderer')) continue;
      if (profile !== undefined && !ours(pid)) continue;
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      total += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] || 0) * 1024;
    } catch {
      // The process went away.
    }
  }
  return total;
}
