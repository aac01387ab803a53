#!/usr/bin/env node
// The decoder in WebAssembly against the native build, side by side in one run: the rank
// worker's decode + model (bench/examples/wasm_decode.rs, release, wasm-bindgen, then
// wasm-opt at the worker's level as Trunk runs it) in Node's V8, fed in the 2 MiB chunks
// a browser's File stream gives, and `memscope-bench --phase worker` (native, release)
// on the same file, in turns. Each wasm run is a fresh process that decodes the file
// twice: `first` starts on V8's baseline tier (a worker that had no warm-up), `second`
// runs tiered up; a second fresh process first runs the worker's warm-up (its synthetic
// snapshot, decoded and modelled three times) and then decodes the file once: what the
// first file of a warmed-up worker gets. Prints medians and throughput ratios in wall
// clock and in the decoding thread's CPU time (the figures to compare on a busy
// machine), and the wasm memory after the first decode (its high-water mark: wasm
// memory never shrinks) beside the native build's peak RSS streaming the same file
// (`--phase model`).
// Usage:
//   cargo build --release -p memscope-bench
//   cargo build --release --target wasm32-unknown-unknown -p memscope-bench --example wasm_decode
//   node bench/wasm_speed.mjs [--runs 5] [--build label=path[@level]]... FILE...
// (--build: a build of the example, e.g. with other profile settings in another target
// directory, and the wasm-opt level to run on it; several are run in turns.)

import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
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
  const [, dir, file, mode] = args;
  const { Decode, memory_bytes, warm_up } = createRequire(import.meta.url)(join(dir, 'wasm_decode.js'));
  // Seconds this thread has run on a CPU (Linux's schedstat, in ns): V8 compiles its
  // optimising tier on other threads, and other processes do not stretch it.
  const cpu = () => Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e9;
  if (mode === 'warm-up') {
    // As the worker before its first file: the pipeline on its synthetic snapshot, then
    // a pause in which the optimising tier's background compiles finish.
    warm_up(3);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  const bytes = readFileSync(file);
  const CHUNK = 2 << 20;
  const times = [];
  const cpus = [];
  let allocations = 0;
  let memory = 0;
  for (let round = 0; round < 2; round++) {
    const t = performance.now();
    const c = cpu();
    const d = new Decode(bytes.length);
    for (let at = 0; at < bytes.length; at += CHUNK) d.feed(bytes.subarray(at, Math.min(at + CHUNK, bytes.length)));
    allocations = d.finish();
    times.push((performance.now() - t) / 1000);
    cpus.push(cpu() - c);
    if (round === 0) memory = memory_bytes();
  }
  console.log(JSON.stringify({ first: times[0], second: times[1], first_cpu: cpus[0], second_cpu: cpus[1], allocations, memory }));
  process.exit(0);
}

const runs = Number(value('--runs', '5'));
// Builds to compare, run in turns with the native one: `--build label=path[@level]`
// (repeatable; level is wasm-opt's, 3 as for the worker, 0 for none). Default: this
// tree's release build of the example.
const builds = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] !== '--build') continue;
  const m = /^([^=]+)=(.+?)(?:@(\d))?$/.exec(args[i + 1] || '');
  if (!m) {
    console.error(`--build wants label=path[@level], not ${args[i + 1]}`);
    process.exit(2);
  }
  builds.push({ label: m[1], raw: m[2], level: m[3] || '3' });
}
if (!builds.length) {
  builds.push({ label: 'this tree', raw: join(root, 'target', 'wasm32-unknown-unknown', 'release', 'examples', 'wasm_decode.wasm'), level: '3' });
}
const files = args.filter((a, i) => !a.startsWith('--') && !['--runs', '--build'].includes(args[i - 1]));
if (!files.length) {
  console.error('usage: node bench/wasm_speed.mjs [--runs N] [--build label=path[@level]]... FILE...');
  process.exit(2);
}
const native = join(root, 'target', 'release', 'memscope-bench');
for (const p of [native, ...builds.map((b) => b.raw)]) {
  if (!existsSync(p)) {
    console.error(`missing ${p}: build it first (see the usage at the top of this file)`);
    process.exit(2);
  }
}
const opt = join(root, 'tests', 'browser', 'node_modules', '.bin', 'wasm-opt');
for (const [i, b] of builds.entries()) {
  b.dir = `/tmp/memscope-wasm-decode-${process.pid}-${i}`;
  mkdirSync(b.dir, { recursive: true });
  // wasm-bindgen names its output after the input's file name: a build kept under
  // another name (a copy of an older build) is copied under the example's name first.
  const raw = join(b.dir, 'wasm_decode.wasm');
  copyFileSync(b.raw, raw);
  execFileSync('wasm-bindgen', ['--target', 'nodejs', '--out-dir', b.dir, raw]);
  const wasm = join(b.dir, 'wasm_decode_bg.wasm');
  // As Trunk runs it for the worker: the level alone.
  if (b.level !== '0') execFileSync(opt, [`-O${b.level}`, '-o', wasm, wasm]);
  b.bytes = statSync(wasm).size;
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (native, wasm) => `${((100 * native) / wasm).toFixed(0)} %`;
const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
console.log(`${runs} runs of each, in turns (native, then each build fresh, then each build after the worker's warm-up); medians; load average ${loadavg()}`);
console.log('wall clock:');
console.log('file                     MiB   build                     wasm MB   native s   wasm first s   wasm second s   wasm÷native throughput (first / second)   wasm memory MiB   native peak RSS MiB');
const cpuLines = [];
for (const file of files) {
  const bytes = statSync(file).size;
  const n = [];
  const nCpu = [];
  for (const b of builds) b.times = { first: [], second: [], first_cpu: [], second_cpu: [], warmed_cpu: [], memory: 0 };
  for (let r = 0; r < runs; r++) {
    const m = JSON.parse(execFileSync(native, ['--phase', 'worker', file], { encoding: 'utf8' }));
    n.push(m.seconds);
    nCpu.push(m.cpu_seconds);
    for (const b of builds) {
      const child = (mode) => JSON.parse(execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--child', b.dir, file, mode], { encoding: 'utf8', maxBuffer: 1 << 20 }));
      const w = child('fresh');
      b.times.first.push(w.first);
      b.times.second.push(w.second);
      b.times.first_cpu.push(w.first_cpu);
      b.times.second_cpu.push(w.second_cpu);
      b.times.memory = w.memory;
      b.times.warmed_cpu.push(child('warm-up').first_cpu);
    }
  }
  const nm = median(n);
  const ncm = median(nCpu);
  const nativeRss = JSON.parse(execFileSync(native, ['--phase', 'model', file], { encoding: 'utf8' })).peak_rss_bytes;
  for (const b of builds) {
    const [fm, sm] = [median(b.times.first), median(b.times.second)];
    console.log(
      `${file.split('/').pop().padEnd(22)} ${(bytes / 1048576).toFixed(1).padStart(6)}   ${b.label.padEnd(24)} ${(b.bytes / 1e6).toFixed(2).padStart(7)} ${nm.toFixed(3).padStart(10)} ${fm.toFixed(3).padStart(13)} ${sm.toFixed(3).padStart(15)}   ` +
        `${`${pct(nm, fm)} / ${pct(nm, sm)}`.padEnd(40)} ${(b.times.memory / 1048576).toFixed(0).padStart(15)} ${(nativeRss / 1048576).toFixed(0).padStart(21)}`,
    );
    const [fc, wc, sc] = [median(b.times.first_cpu), median(b.times.warmed_cpu), median(b.times.second_cpu)];
    cpuLines.push(
      `${file.split('/').pop().padEnd(22)} ${b.label.padEnd(24)} ${ncm.toFixed(3).padStart(10)} ${fc.toFixed(3).padStart(13)} ${wc.toFixed(3).padStart(14)} ${sc.toFixed(3).padStart(15)}   ` +
        `${pct(ncm, fc)} / ${pct(ncm, wc)} / ${pct(ncm, sc)}`,
    );
  }
}
// The same on each thread's CPU time: the figures to compare on a busy machine.
console.log('\nthread CPU time (first: a fresh process; warmed up: its first file after the worker\'s warm-up; second: the same file again):');
console.log('file                     build                     native s   wasm first s   warmed up s   wasm second s   wasm÷native throughput (first / warmed up / second)');
for (const line of cpuLines) console.log(line);
console.log(`load average at the end ${loadavg()}`);
