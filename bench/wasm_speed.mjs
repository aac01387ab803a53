#!/usr/bin/env node
// The decoder in WebAssembly against the native build, side by side in one run: the rank
// worker's decode + model (bench/examples/wasm_decode.rs, release, wasm-bindgen, then
// wasm-opt at the worker's level as Trunk runs it) in Node's V8, fed in the 2 MiB chunks
// a browser's File stream gives, and `memscope-bench --phase worker` (native, release)
// on the same file, in turns. Each wasm run is a fresh process that decodes the file
// twice: `first` starts on V8's baseline tier (a worker that had no warm-up), `second`
// runs tiered up (a warmed-up worker). Prints medians and throughput ratios.
// Usage:
//   cargo build --release -p memscope-bench
//   cargo build --release --target wasm32-unknown-unknown -p memscope-bench --example wasm_decode
//   node bench/wasm_speed.mjs [--runs 5] [--wasm-opt 3|4|0] [--label what] [--wasm PATH] FILE...
// (--wasm: another build of the example, e.g. with other profile settings in another
// target directory.)

import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const args = process.argv.slice(2);
const value = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};

// A child run: decode the file twice in this process, print the seconds as JSON.
if (args[0] === '--child') {
  const [, dir, file] = args;
  const { Decode } = createRequire(import.meta.url)(join(dir, 'wasm_decode.js'));
  const bytes = readFileSync(file);
  const CHUNK = 2 << 20;
  const times = [];
  let allocations = 0;
  for (let round = 0; round < 2; round++) {
    const t = performance.now();
    const d = new Decode(bytes.length);
    for (let at = 0; at < bytes.length; at += CHUNK) d.feed(bytes.subarray(at, Math.min(at + CHUNK, bytes.length)));
    allocations = d.finish();
    times.push((performance.now() - t) / 1000);
  }
  console.log(JSON.stringify({ first: times[0], second: times[1], allocations }));
  process.exit(0);
}

const runs = Number(value('--runs', '5'));
const level = value('--wasm-opt', '3');
const label = value('--label', `wasm-opt -O${level}`);
const files = args.filter((a, i) => !a.startsWith('--') && !['--runs', '--wasm-opt', '--label', '--wasm'].includes(args[i - 1]));
if (!files.length) {
  console.error('usage: node bench/wasm_speed.mjs [--runs N] [--wasm-opt 3|4|0] FILE...');
  process.exit(2);
}
const native = join(root, 'target', 'release', 'memscope-bench');
const raw = value('--wasm', join(root, 'target', 'wasm32-unknown-unknown', 'release', 'examples', 'wasm_decode.wasm'));
for (const p of [native, raw]) {
  if (!existsSync(p)) {
    console.error(`missing ${p}: build it first (see the usage at the top of this file)`);
    process.exit(2);
  }
}
const dir = `/tmp/memscope-wasm-decode-${process.pid}`;
mkdirSync(dir, { recursive: true });
execFileSync('wasm-bindgen', ['--target', 'nodejs', '--out-dir', dir, raw]);
const wasm = join(dir, 'wasm_decode_bg.wasm');
if (level !== '0') {
  const opt = join(root, 'tests', 'browser', 'node_modules', '.bin', 'wasm-opt');
  // As Trunk runs it for the worker: the level alone.
  execFileSync(opt, [`-O${level}`, '-o', wasm, wasm]);
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`${label}: wasm ${(statSync(wasm).size / 1e6).toFixed(2)} MB; ${runs} runs each, in turns`);
console.log('file                     MiB   native s   wasm first s   wasm second s   wasm÷native throughput (first / second)');
for (const file of files) {
  const bytes = statSync(file).size;
  const n = [];
  const first = [];
  const second = [];
  for (let r = 0; r < runs; r++) {
    n.push(JSON.parse(execFileSync(native, ['--phase', 'worker', file], { encoding: 'utf8' })).seconds);
    const w = JSON.parse(execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--child', dir, file], { encoding: 'utf8', maxBuffer: 1 << 20 }));
    first.push(w.first);
    second.push(w.second);
  }
  const [nm, fm, sm] = [median(n), median(first), median(second)];
  console.log(
    `${file.split('/').pop().padEnd(22)} ${(bytes / 1048576).toFixed(1).padStart(6)} ${nm.toFixed(3).padStart(9)} ${fm.toFixed(3).padStart(13)} ${sm.toFixed(3).padStart(15)}   ` +
      `${((100 * nm) / fm).toFixed(0)} % / ${((100 * nm) / sm).toFixed(0)} %`,
  );
}
