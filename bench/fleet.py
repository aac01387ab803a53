#!/usr/bin/env python3
"""Generate multi-rank snapshot sets with known problems, from a real corpus snapshot.

memscope-fleet points at the rank of a distributed job that is in trouble. Its tests
and benchmarks need rank sets where the truth is known: this script builds them. Each
rank is the real source trace repeated as K training iterations by bench/scale.py
(`scale.generate`, with the per-rank jitter of `scale.Jitter`: clock offsets, time
stretch, ~10 % of freed allocations up to ~1.5 % smaller), then problems are injected
into chosen ranks, and the result is written with scale.py's streaming pickler
(`scale.Writer`: protocol 4, the byte structure CPython's pickler gives). Nothing here is
committed: sets go to /tmp/memscope-fleet/<name> unless told otherwise. Standard
library only.

Usage
    python3 bench/fleet.py --preset leak8        # 8 ranks, rank 3 leaks, ProfilerStep marks
    python3 bench/fleet.py --preset clean8       # 8 ranks, nothing injected
    python3 bench/fleet.py --preset mixed8       # leak on 3, skew on 5, OOM on 6
    python3 bench/fleet.py --ranks 4 --iterations 3 --leak-rank 1 --out DIR
    python3 bench/fleet.py --ranks 8 --target-mib 12 --leak-rank 3 --profiler-steps
Options: --source PATH (default: fullstep-19k-events-cpp-frames.pickle, as scale.py),
--seed N, --gap-us N, --leak-rank R [--leak-fraction F], --skew-rank R
[--skew-factor F] [--skew-shift-us N], --oom-rank R, --profiler-steps.

What is injected (all recorded in DIR/manifest.json: rank, call site, sizes, moments)
  * leak (--leak-rank R): in every iteration, one `alloc` that is never freed, from a
    new call site: the stack of the source allocation it follows with one new user
    frame (`cache_activations`, /workspace/train/leaky_cache.py:42) inserted before its
    innermost Python frame, so `frames::call_site` names it. Its size is --leak-fraction
    (default 0.05) of the source's peak allocated bytes (rounded to 512 B), placed in
    the middle of the iteration at fresh addresses. The leaked blocks are added to
    `segments` as active blocks of new segments (one per allocation), so the state at
    the snapshot agrees with the trace; no `segment_alloc` is added for them (the trace
    then starts with them reserved, as if the cache had held the space), which keeps a
    leak from also looking like cache growth.
  * skew (--skew-rank R): every alloc/free size of the rank's trace times --skew-factor
    (default 1.2: the rank holds 20 % more, e.g. a longer sequence or an uneven
    pipeline stage), and/or every clock shifted by --skew-shift-us (a late rank).
  * OOM (--oom-rank R): an `oom` entry (no addr; `size` = request, `device_free`) right
    after the peak of the last iteration, with the stack of the allocation that made
    the peak (the manifest gives its innermost Python frame). The request is 25 % of the source's peak allocated bytes, device_free an
    eighth of the request. The trace goes on (the job caught it and went on).
  * --profiler-steps: `ProfilerStep#k` START/END annotations around iteration k (as
    torch.profiler writes them), merged into external_annotations in clock order.

Iteration k's entries are known exactly from scale.py's plan: iteration 0 is the source
trace (minus its cut), every later one is `len(plan.seq("mid"))` entries, starting with
the frees scale.py inserts for what the previous iteration left live.
"""

import argparse
import io
import json
import os
import pickle
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale  # noqa: E402  (bench/scale.py: Source, generate, Jitter, Writer, choose)

DEFAULT_OUT_DIR = "/tmp/memscope-fleet"
LEAK_FRAME = {"name": "cache_activations",
              "filename": "/workspace/train/leaky_cache.py", "line": 42}
LEAK_LABEL = "cache_activations (leaky_cache.py:42)"
PRESETS = {  # name -> (ranks, iterations, injections)
    "clean8": (8, 4, {}),
    "leak8": (8, 4, {"leak_rank": 3, "profiler_steps": True}),
    "mixed8": (8, 4, {"leak_rank": 3, "skew_rank": 5, "oom_rank": 6,
                      "profiler_steps": True}),
}
FREES = ("free_requested", "free_completed", "free")


def iteration_ranges(src, K, cuts, dev=0):
    """[(start, end)] entry indices of each iteration in the generated device trace."""
    plan = src.plans[dev]
    n0 = len(plan.entries) - cuts[dev]
    m = len(plan.seq("mid"))
    out = [(0, n0)]
    for k in range(1, K):
        out.append((n0 + (k - 1) * m, n0 + k * m))
    return out


def replay_peak(trace, lo, hi):
    """Index in [lo, hi) after which allocated bytes (of entries in range) peak."""
    live, level, best, at = {}, 0, -1, lo
    for i in range(lo, hi):
        e = trace[i]
        a = e.get("action")
        if a == "alloc":
            live[e.get("addr")] = e.get("size", 0)
            level += e.get("size", 0)
        elif a in ("free_completed", "free"):
            level -= live.pop(e.get("addr"), 0)
        if level > best:
            best, at = level, i
    return at


def peak_allocated(obj, dev=0):
    """Peak allocated bytes of device `dev` as docs/semantics.md defines them (allocations
    made before the window included): what injection sizes are relative to."""
    trace = obj["device_traces"][dev] if dev < len(obj["device_traces"]) else []
    live, level, best, before = {}, 0, 0, 0
    for e in trace:
        a, addr, size = e.get("action"), e.get("addr"), e.get("size", 0)
        if a == "alloc":
            if addr in live:
                level -= live.pop(addr)
            live[addr] = size
            level += size
        elif a == "free_requested" and addr not in live:
            before += size  # made before the window, pending until its free_completed
            live[addr] = size
        elif a in ("free_completed", "free"):
            if addr in live:
                level -= live.pop(addr)
            else:
                before += size
                level -= size
        best = max(best, level)
    for seg in obj.get("segments", []):
        if seg.get("device", 0) != dev:
            continue
        for blk in seg.get("blocks", []):
            if blk.get("state") in ("active_allocated", "active_pending_free") \
                    and blk.get("address") not in live:
                before += blk.get("requested_size", blk.get("size", 0))
    return max(1, before + best)


def leak_frames(frames):
    """A copy of `frames` with LEAK_FRAME before its innermost Python frame."""
    frames = list(frames or [])
    at = next((i for i, f in enumerate(frames)
               if type(f) is dict and str(f.get("filename", "")).endswith(".py")),
              len(frames))
    return frames[:at] + [dict(LEAK_FRAME)] + frames[at:]


def fresh_base(obj):
    """An address range above every segment and trace address, 1 GiB aligned."""
    top = 0
    for s in obj.get("segments", []):
        top = max(top, s.get("address", 0) + s.get("total_size", 0))
    for tr in obj["device_traces"]:
        for e in tr:
            top = max(top, e.get("addr", 0) + e.get("size", 0))
    return (top // (1 << 30) + 2) << 30


def new_segment(template, address, size, requested, frames):
    """A segment dict shaped like `template` holding one active block."""
    seg_size = -(-size // (2 << 20)) * (2 << 20)
    blocks = [{"address": address, "size": size, "requested_size": requested,
               "state": "active_allocated", "frames": frames}]
    if seg_size > size:
        blocks.append({"address": address + size, "size": seg_size - size,
                       "requested_size": 0, "state": "inactive", "frames": []})
    values = {"device": 0, "address": address, "total_size": seg_size,
              "allocated_size": size, "active_size": size, "requested_size": requested,
              "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
              "is_expandable": False, "frames": [], "blocks": blocks}
    keys = list(template) if template else list(values)
    return {k: values.get(k, template.get(k) if template else None) for k in keys}


def inject(obj, src, K, cuts, rank, opts, peak, notes):
    """Apply the injections chosen for `rank` to the loaded snapshot `obj`."""
    trace = obj["device_traces"][0]
    ranges = iteration_ranges(src, K, cuts)
    assert ranges[-1][1] == len(trace), (ranges[-1], len(trace))
    after = {}  # entry index -> entries to insert after it

    if opts.get("skew_rank") == rank:
        factor = opts.get("skew_factor", 1.2)
        shift = opts.get("skew_shift_us", 0)
        for e in trace:
            if e.get("action") in FREES + ("alloc",) and type(e.get("size")) is int:
                e["size"] = int(round(e["size"] * factor))
            if shift and type(e.get("time_us")) is int:
                e["time_us"] += shift
        for a in obj.get("external_annotations") or []:
            if shift and type(a) is dict and type(a.get("time_us")) is int:
                a["time_us"] += shift
        notes.append({"kind": "skew", "rank": rank, "factor": factor, "shift_us": shift})

    if opts.get("oom_rank") == rank:
        lo, hi = ranges[-1]
        at = replay_peak(trace, lo, hi)
        e = trace[at]
        request = max(512, int(peak * 0.25) // 512 * 512)
        entry = {"action": "oom", "size": request, "stream": e.get("stream", 0),
                 "device_free": request // 8}
        if "time_us" in e:
            entry["time_us"] = e["time_us"]
        if "frames" in e:
            entry["frames"] = e["frames"]
        after.setdefault(at, []).append(entry)
        py = next((f for f in e.get("frames") or () if type(f) is dict
                   and str(f.get("filename", "")).endswith(".py")), None)
        notes.append({"kind": "oom", "rank": rank, "iteration": K - 1,
                      "request_bytes": request, "device_free_bytes": request // 8,
                      "time_us": e.get("time_us"), "after_entry": at,
                      "innermost_python_frame": py})

    if opts.get("leak_rank") == rank:
        size = max(512, int(peak * opts.get("leak_fraction", 0.05)) // 512 * 512)
        base = fresh_base(obj)
        stride = -(-size // (2 << 20)) * (2 << 20) + (2 << 20)
        template = (obj.get("segments") or [None])[0]
        frames_list = None
        leaks = []
        for k, (lo, hi) in enumerate(ranges):
            mid = lo + (hi - lo) // 2
            j = next((i for i in range(mid, lo - 1, -1) if trace[i].get("action") == "alloc"),
                     mid)
            if frames_list is None:  # one list object, shared as torch shares tracebacks
                frames_list = leak_frames(trace[j].get("frames"))
            addr = base + k * stride
            entry = {"action": "alloc", "addr": addr, "size": size,
                     "stream": trace[j].get("stream", 0)}
            if "time_us" in trace[mid]:
                entry["time_us"] = trace[mid]["time_us"]
            entry["frames"] = frames_list
            after.setdefault(mid, []).append(entry)
            obj["segments"].append(new_segment(template, addr, size, size, frames_list))
            leaks.append({"iteration": k, "addr": addr, "time_us": entry.get("time_us"),
                          "after_entry": mid})
        notes.append({"kind": "leak", "rank": rank, "site": LEAK_FRAME, "label": LEAK_LABEL,
                      "bytes_per_iteration": size, "iterations": K, "allocations": leaks})

    if after:
        out = []
        for i, e in enumerate(trace):
            out.append(e)
            out.extend(after.get(i, ()))
        obj["device_traces"][0] = out
        trace = out

    if opts.get("profiler_steps"):
        # Iteration ranges in the new trace (insertions shift them).
        shift, bounds = 0, []
        inserted = sorted((i, len(v)) for i, v in after.items())
        for lo, hi in ranges:
            n_before_lo = sum(n for i, n in inserted if i < lo)
            n_before_hi = sum(n for i, n in inserted if i < hi)
            bounds.append((lo + n_before_lo, hi + n_before_hi))
        marks = []
        prev_end = None
        for k, (lo, hi) in enumerate(bounds):
            t0, t1 = trace[lo].get("time_us"), trace[hi - 1].get("time_us")
            if type(t0) is not int or type(t1) is not int:
                continue
            start = t0 - 1 if prev_end is None else max(prev_end, t0 - 1)
            end = t1 + 1
            prev_end = end
            name = f"ProfilerStep#{k}"
            marks.append({"stage": "START", "name": name, "device": 0, "time_us": start})
            marks.append({"stage": "END", "name": name, "device": 0, "time_us": end})
        anns = obj.get("external_annotations")
        anns = list(anns) if type(anns) is list else []
        anns = sorted(anns + marks, key=lambda a: a.get("time_us", 0) if type(a) is dict else 0)
        obj["external_annotations"] = anns


def write(obj, path):
    """Writes `obj` with scale.py's streaming pickler (protocol 4)."""
    tmp = path + ".tmp"
    with open(tmp, "wb", buffering=1 << 20) as f:
        f.write(pickle.PROTO + b"\x04")
        w = scale.Writer(f)
        w.written = 2
        w.save(obj)
        w.buf += pickle.STOP
        w.commit(force=True)
    os.replace(tmp, path)
    return w.written


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", choices=sorted(PRESETS))
    ap.add_argument("--ranks", type=int)
    ap.add_argument("--iterations", type=int, help="whole training iterations per rank")
    ap.add_argument("--target-mib", type=float, help="size of each rank file, in MiB")
    ap.add_argument("--source", help="snapshot to scale (default: scale.py's)")
    ap.add_argument("--out", help="output directory")
    ap.add_argument("--out-dir", default=DEFAULT_OUT_DIR)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gap-us", type=int, default=5000)
    ap.add_argument("--leak-rank", type=int)
    ap.add_argument("--leak-fraction", type=float, default=0.05)
    ap.add_argument("--skew-rank", type=int)
    ap.add_argument("--skew-factor", type=float, default=1.2)
    ap.add_argument("--skew-shift-us", type=int, default=0)
    ap.add_argument("--oom-rank", type=int)
    ap.add_argument("--profiler-steps", action="store_true")
    args = ap.parse_args(argv)

    opts = {"leak_fraction": args.leak_fraction, "skew_factor": args.skew_factor,
            "skew_shift_us": args.skew_shift_us}
    ranks, iterations = args.ranks, args.iterations
    name = "fleet"
    if args.preset:
        pr, pit, pinj = PRESETS[args.preset]
        ranks = ranks or pr
        iterations = iterations or (None if args.target_mib else pit)
        opts.update(pinj)
        name = args.preset
    for k in ("leak_rank", "skew_rank", "oom_rank"):
        if getattr(args, k) is not None:
            opts[k] = getattr(args, k)
    if args.profiler_steps:
        opts["profiler_steps"] = True
    ranks = ranks or 8
    if iterations is None and args.target_mib is None:
        iterations = 4
    for k in ("leak_rank", "skew_rank", "oom_rank"):
        if opts.get(k) is not None and not 0 <= opts[k] < ranks:
            ap.error(f"--{k.replace('_', '-')} must be in 0..{ranks - 1}")

    src_path = args.source or next((os.path.normpath(p) for p in scale.DEFAULT_SOURCES
                                    if os.path.exists(p)), None)
    if not src_path:
        raise SystemExit("no source snapshot found; give --source")
    t0 = time.time()
    src = scale.Source(src_path)
    if not src.plans or not src.plans[0].entries:
        raise SystemExit(f"{src_path}: device 0 has no trace to repeat")
    if iterations is not None:
        K, cuts = iterations, [0] * len(src.plans)
    else:
        K, cuts = scale.choose(src, round(args.target_mib * 1024 * 1024), args.gap_us)
        if any(cuts):  # injections need whole iterations: keep K, drop the cut
            cuts = [0] * len(src.plans)
    peak = peak_allocated(src.obj)

    out_dir = args.out or os.path.join(args.out_dir, name)
    os.makedirs(out_dir, exist_ok=True)
    manifest = {"generator": "bench/fleet.py", "source": os.path.basename(src_path),
                "ranks": ranks, "iterations": K, "seed": args.seed, "gap_us": args.gap_us,
                "profiler_steps": bool(opts.get("profiler_steps")),
                "source_peak_allocated_bytes": peak, "files": [], "injected": []}
    for rank in range(ranks):
        t1 = time.time()
        jit = scale.Jitter(args.seed, rank, src)
        buf = io.BytesIO()
        scale.generate(src, K, cuts, buf, args.gap_us, jit)
        obj = pickle.loads(buf.getvalue())
        del buf
        inject(obj, src, K, cuts, rank, opts, peak, manifest["injected"])
        path = os.path.join(out_dir, f"rank{rank}.pickle")
        size = write(obj, path)
        events = sum(len(t) for t in obj["device_traces"])
        manifest["files"].append({"file": os.path.basename(path), "rank": rank,
                                  "bytes": size, "events": events})
        print(f"{path}: {size} bytes ({size / 2**20:.1f} MiB), {events} events, "
              f"{K} iterations, {time.time() - t1:.1f}s", flush=True)
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    print(f"{out_dir}/manifest.json: {len(manifest['injected'])} injections; "
          f"{time.time() - t0:.1f}s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
