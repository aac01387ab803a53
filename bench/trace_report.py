#!/usr/bin/env python3
"""Reads a trace written by bench/trace.mjs: where one load's time went, per thread.

  python3 bench/trace_report.py tasks TRACE [THREAD,...]    # each thread's tasks over 2 ms, with their largest parts
  python3 bench/trace_report.py profile TRACE [FROM_MS TO_MS]  # V8's samples per function (self and inclusive)
  python3 bench/trace_report.py buckets TRACE STEP_MS NAME,...  # per step, samples under each named function

Times are ms after the page's `memscope:files` mark. Function names need a build that
keeps the wasm names (see bench/trace.mjs).
"""

import collections
import json
import re
import sys


def load(path):
    events = json.load(open(path))["traceEvents"]
    threads = {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in events
        if e.get("ph") == "M" and e.get("name") == "thread_name"
    }
    marks = {}
    for e in events:
        if e.get("name", "").startswith("memscope"):
            marks.setdefault(e["name"], e["ts"])
    return events, threads, marks


def profiles(events):
    """V8's sampling profiles, one per thread: nodes, parents, (time, node) samples."""
    found = {}
    for e in events:
        if e["name"] == "Profile":
            found[e["id"]] = {
                "start": e["args"]["data"]["startTime"],
                "thread": (e["pid"], e["tid"]),
                "nodes": {},
                "samples": [],
                "deltas": [],
            }
    for e in events:
        if e["name"] == "ProfileChunk" and e["id"] in found:
            p, data = found[e["id"]], e["args"]["data"]
            for n in data.get("cpuProfile", {}).get("nodes", []):
                p["nodes"][n["id"]] = n
            p["samples"] += data.get("cpuProfile", {}).get("samples", [])
            p["deltas"] += data.get("timeDeltas", [])
    for p in found.values():
        p["parent"] = {n["id"]: n["parent"] for n in p["nodes"].values() if "parent" in n}
        t, timed = p["start"], []
        for s, dt in zip(p["samples"], p["deltas"]):
            t += dt
            timed.append((t, s))
        p["timed"] = timed
    return found.values()


def stack(p, node):
    """Function names from the root to `node`, without Rust hashes."""
    names = []
    while node in p["nodes"]:
        names.append(re.sub(r"::h[0-9a-f]{16}", "", p["nodes"][node]["callFrame"]["functionName"]))
        node = p["parent"].get(node)
    return names[::-1]


def tasks(path, wanted):
    events, threads, marks = load(path)
    t0 = marks["memscope:files"]
    end = max(marks.values()) + 20_000
    by_thread = collections.defaultdict(list)
    for e in events:
        name = threads.get((e.get("pid"), e.get("tid")))
        if e.get("ph") == "X" and name in wanted and e["ts"] + e.get("dur", 0) >= t0 and e["ts"] <= end:
            by_thread[(name, e["tid"])].append(e)
    for (name, tid), evs in by_thread.items():
        print(f"== {name} ({tid})")
        tops = [e for e in evs if e["name"] in ("ThreadControllerImpl::RunTask", "ThreadPool_RunTask")]
        for top in sorted(tops, key=lambda e: e["ts"]):
            start, dur = top["ts"], top.get("dur", 0)
            if dur < 2000:
                continue
            inner = [
                e
                for e in evs
                if e is not top and start <= e["ts"] and e["ts"] + e.get("dur", 0) <= start + dur and e.get("dur", 0) > 300
            ]
            inner.sort(key=lambda e: -e["dur"])
            parts = ", ".join(f"{e['name']} {e['dur'] / 1000:.1f}" for e in inner[:4])
            print(f"  {(start - t0) / 1000:8.1f} +{dur / 1000:7.1f}  {parts}")
    print({k: round((v - t0) / 1000, 1) for k, v in sorted(marks.items(), key=lambda kv: kv[1])})


def profile(path, lo_ms, hi_ms):
    events, threads, marks = load(path)
    t0 = marks["memscope:files"]
    lo, hi = t0 + lo_ms * 1000, t0 + hi_ms * 1000
    for p in profiles(events):
        own, total, n = collections.Counter(), collections.Counter(), 0
        for t, s in p["timed"]:
            if lo <= t <= hi:
                n += 1
                names = stack(p, s)
                own[names[-1] or "(anonymous)"] += 1
                for f in set(names):
                    total[f] += 1
        if n < 20:
            continue
        print(f"== {threads.get(p['thread'], p['thread'])}: {n} samples")
        for f, c in own.most_common(20):
            print(f"  self {c:6d} {f[:110]}")
        for f, c in total.most_common(30):
            print(f"  all  {c:6d} {f[:110]}")


def buckets(path, step_ms, names):
    events, threads, marks = load(path)
    t0 = marks["memscope:files"]
    end = max(marks.values()) + 30_000
    for p in profiles(events):
        rows = collections.defaultdict(collections.Counter)
        for t, s in p["timed"]:
            if t0 <= t <= end:
                chain = stack(p, s)
                label = next((k for k in names if any(k in f for f in chain)), None)
                if label is None:
                    label = chain[-1] if chain and chain[-1].startswith("(") else "other"
                rows[int((t - t0) / 1000 / step_ms)][label] += 1
        if sum(sum(c.values()) for c in rows.values()) < 30:
            continue
        print(f"== {threads.get(p['thread'], p['thread'])}")
        for b in sorted(rows):
            print(f"{b * step_ms:7.0f} ms: " + ", ".join(f"{k} {v}" for k, v in rows[b].most_common(5)))
    print({k: round((v - t0) / 1000, 1) for k, v in sorted(marks.items(), key=lambda kv: kv[1])})


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    command, path = argv[1], argv[2]
    if command == "tasks":
        wanted = argv[3].split(",") if len(argv) > 3 else ["CrRendererMain", "DedicatedWorker thread", "CrGpuMain"]
        tasks(path, set(wanted))
    elif command == "profile":
        lo, hi = (float(argv[3]), float(argv[4])) if len(argv) > 4 else (0.0, 1e12)
        profile(path, lo, hi)
    elif command == "buckets" and len(argv) > 4:
        buckets(path, float(argv[3]), argv[4].split(","))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
