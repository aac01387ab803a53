#!/usr/bin/env python3
"""Reference implementation of `memscope summary` (the test oracle).

Reads PyTorch CUDA memory snapshots (`torch.cuda.memory._dump_snapshot()` pickles, the
same schema as JSON, either of them gzip-compressed) with CPython's own `pickle`,
`json` and `gzip` modules, and prints one JSON object per (file, reported device) with
the figures defined in docs/semantics.md. The Rust model is tested against this output,
so this script favours a literal, simple reading of the definitions over speed.

Usage:
    python3 tests/reference/summary.py FILE...
        One line per (file, device), `json.dumps(obj, sort_keys=True)`. A file that
        cannot be read prints {"file": ..., "error": "<reason>"}; the exit status is 1
        if any file failed. A valid snapshot with no reported device prints nothing.

    python3 tests/reference/summary.py --check EXPECTED.jsonl FILE...
        Recomputes the output for FILE... and compares it with EXPECTED.jsonl; prints a
        unified diff and exits 1 if they differ, exits 0 if identical (error lines are
        part of the compared output, so expected failures do not fail the check).

Pickles are loaded with an Unpickler whose find_class refuses everything, so a pickle
that needs a class (GLOBAL, STACK_GLOBAL, INST, OBJ, EXT*) is refused before anything is
imported or executed. A pickle that loads is then checked as the pure-Python `pickle`
module reads it: no opcode may cross the end of a protocol 4 frame and no frame may
start inside another (CPython's C unpickler only checks that a frame's bytes exist);
and bytes after STOP are refused, as JSON refuses data after its document. Standard
library only (Python 3.11).
"""

import difflib
import gzip
import io
import json
import os
import pickle
import pickletools
import re
import sys
import zlib

# Containers nested deeper than this are refused. Real snapshots nest about 8 levels
# (dict > list > dict > list > dict > ...); this is a choice of the reference, not of
# the semantics, and only matters for hostile inputs (crafted deep-100k.pickle).
MAX_DEPTH = 1000

ALLOCATED_STATES = ("active_allocated", "active_pending_free")
RESERVE_ACTIONS = ("segment_alloc", "segment_map")
RELEASE_ACTIONS = ("segment_free", "segment_unmap")
CLASS_OPCODES = ("GLOBAL", "STACK_GLOBAL", "INST", "OBJ", "EXT1", "EXT2", "EXT4")


class LoadError(Exception):
    """The file is not a readable snapshot; str(self) is the short reason."""


# --------------------------------------------------------------------------- loading


class _Refused(Exception):
    def __init__(self, module, name):
        super().__init__(module, name)
        self.module = module
        self.name = name


class RefusingUnpickler(pickle.Unpickler):
    """Plain data only: every class lookup and persistent id is refused."""

    def find_class(self, module, name):
        raise _Refused(module, name)

    def persistent_load(self, pid):
        raise LoadError("refused PERSID: pickle uses persistent ids (not plain data)")


def _first_class_opcode(data):
    """Name of the first opcode that needs a class (scanned, never executed)."""
    try:
        for opcode, _arg, _pos in pickletools.genops(data):
            if opcode.name in CLASS_OPCODES:
                return opcode.name
    except Exception:  # the scan itself may hit truncated data after the opcode
        pass
    return "GLOBAL"


def load_pickle(data):
    f = io.BytesIO(data)
    try:
        obj = RefusingUnpickler(f).load()
    except _Refused as e:
        op = _first_class_opcode(data)
        raise LoadError(f"refused {op} {e.module}.{e.name}: pickle needs a class (not plain data)")
    except EOFError:
        raise LoadError("truncated pickle: input ended before STOP")
    except MemoryError:
        raise LoadError("bad pickle: an item declares more bytes than can be allocated")
    except pickle.UnpicklingError as e:
        if "truncated" in str(e):
            raise LoadError("truncated pickle: an item declares more bytes than remain")
        raise LoadError(f"bad pickle: {e}")
    except LoadError:
        raise
    except Exception as e:  # ValueError, TypeError, OverflowError, UnicodeDecodeError, ...
        raise LoadError(f"bad pickle: {type(e).__name__}: {e}")
    if f.tell() != len(data):
        raise LoadError(
            f"data after the end of the pickle: {len(data) - f.tell()} bytes follow its STOP")
    check_frames(data)
    return obj


def check_frames(data):
    """Frames as pickle.py enforces them: an opcode that starts inside a frame ends
    inside it, and a FRAME starts only where the previous frame ended."""
    frame_end = None
    ops = list(pickletools.genops(data))
    for (op, arg, pos), nxt in zip(ops, ops[1:] + [(None, None, len(data))]):
        end = nxt[2]
        if frame_end is not None and pos >= frame_end:
            frame_end = None
        if op.name == "FRAME":
            if frame_end is not None:
                raise LoadError(f"damaged frame: a FRAME at byte {pos} starts inside a frame")
            frame_end = end + arg
            if frame_end > len(data):
                raise LoadError(f"truncated pickle: the FRAME at byte {pos} declares {arg} "
                                "bytes, more than remain")
        elif frame_end is not None and end > frame_end:
            raise LoadError(f"damaged frame: {op.name} at byte {pos} crosses its frame's end")


def load_json(data):
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise LoadError(f"bad JSON: not UTF-8 ({e.reason})")
    try:
        return json.loads(text)
    except RecursionError:
        raise LoadError("bad JSON: nested too deeply")
    except json.JSONDecodeError as e:
        if e.pos >= len(text.rstrip()) or e.msg.startswith("Unterminated string"):
            raise LoadError("truncated JSON: input ended inside a value")
        raise LoadError(f"bad JSON: {e.msg} at byte {e.pos}")


def decode(data):
    """Bytes of a file -> Python object, the encoding decided by content."""
    if not data:
        raise LoadError("empty file")
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except EOFError:
            raise LoadError("truncated gzip stream")
        except (OSError, zlib.error) as e:
            raise LoadError(f"bad gzip stream: {e}")
        if not data:
            raise LoadError("empty file (inside gzip)")
    first = data.lstrip(b" \t\r\n")[:1]
    if first in (b"{", b"["):
        return load_json(data)
    return load_pickle(data)


def _children(obj):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield v
    else:
        yield from obj


def check_nesting(root):
    """Refuse containers nested deeper than MAX_DEPTH, and cycles.

    Iterative, and memoized per object so that shared sub-objects (pickle memo) are
    measured once: a 64-level tree of shared lists costs 64 steps, not 2**64.
    """
    containers = (list, tuple, dict, set, frozenset)
    height = {}  # id -> height of the finished container
    in_progress = set()
    stack = [(root, False)]
    while stack:
        obj, finished = stack.pop()
        if not isinstance(obj, containers):
            continue
        key = id(obj)
        if finished:
            h = 1
            for kid in _children(obj):
                if isinstance(kid, containers):
                    h = max(h, height[id(kid)] + 1)
            if h > MAX_DEPTH:
                raise LoadError(f"nested too deeply (more than {MAX_DEPTH} levels)")
            height[key] = h
            in_progress.discard(key)
            continue
        if key in height:
            continue
        if key in in_progress:
            raise LoadError("nested too deeply (a container contains itself)")
        in_progress.add(key)
        stack.append((obj, True))
        pushed = set()
        for kid in _children(obj):
            if isinstance(kid, containers) and id(kid) not in height and id(kid) not in pushed:
                pushed.add(id(kid))
                stack.append((kid, False))


def as_snapshot(obj):
    """Validate the top level; returns (segments, device_traces)."""
    if isinstance(obj, dict):
        if "segments" not in obj and "device_traces" not in obj:
            raise LoadError("not a snapshot: a dict without segments or device_traces")
        segments = obj.get("segments", [])
        traces = obj.get("device_traces", [])
    elif isinstance(obj, list):  # legacy torch.cuda.memory_snapshot(): bare segment list
        if not all(isinstance(s, dict) for s in obj):
            raise LoadError("not a snapshot: a list whose items are not segment dicts")
        segments, traces = obj, []
    else:
        raise LoadError(f"not a snapshot: top level is {type(obj).__name__}")
    if not isinstance(segments, list) or not all(isinstance(s, dict) for s in segments):
        raise LoadError("not a snapshot: segments is not a list of dicts")
    if not isinstance(traces, list) or not all(
        isinstance(t, list) and all(isinstance(e, dict) for e in t) for t in traces
    ):
        raise LoadError("not a snapshot: device_traces is not a list of lists of dicts")
    return segments, traces


def read_snapshot(path):
    with open(path, "rb") as f:
        data = f.read()
    obj = decode(data)
    check_nesting(obj)
    return as_snapshot(obj)


# --------------------------------------------------------------------------- summary


def rank_of(base):
    m = re.search(r"rank[_-]?([0-9]+)", base, re.IGNORECASE | re.ASCII)
    return int(m.group(1)) if m else None


def frame_key(frame):
    return (frame.get("filename"), frame.get("line"), frame.get("name"))


def frames_of(obj):
    """The frame dicts listed under obj['frames'] (absent or None -> none)."""
    frames = obj.get("frames") or []
    return [f for f in frames if isinstance(f, dict)]


def allocated_in_trace_peak(entries, active_blocks):
    """Peak of allocated-in-trace, replaying the trace as docs/semantics.md says.

    allocated(t) = before + inwindow(t), where `before` is the requested size of every
    allocation made before the window (they are live from the start), and inwindow(t)
    adds each in-window alloc and subtracts every allocation that ends at or before t.
    """
    live = {}  # addr -> requested size of the allocation live there
    before = 0  # Σ size of allocations made before the window
    inwindow = 0
    peak_inwindow = 0  # the start of the window counts (inwindow = 0)
    for e in entries:
        action = e.get("action")
        addr = e.get("addr")
        size = e.get("size", 0)
        if action == "alloc":
            if addr in live:  # a free was not recorded: the old one ends here
                inwindow -= live.pop(addr)
            live[addr] = size
            inwindow += size
        elif action == "free_requested":
            if addr not in live:  # made before the window; stays live (pending)
                before += size
                live[addr] = size
        elif action in ("free_completed", "free"):
            if addr in live:
                inwindow -= live.pop(addr)
            else:  # made before the window, live from the start, ends here
                before += size
                inwindow -= size
        peak_inwindow = max(peak_inwindow, inwindow)
    for block in active_blocks:  # still live at the end, never seen in the trace
        if block.get("address") not in live:
            before += block.get("requested_size", block.get("size", 0))
    return before + peak_inwindow


def reserved_peak(entries, reserved_bytes):
    net = 0
    for e in entries:
        if e.get("action") in RESERVE_ACTIONS:
            net += e.get("size", 0)
        elif e.get("action") in RELEASE_ACTIONS:
            net -= e.get("size", 0)
    reserved = reserved_bytes - net
    peak = reserved
    for e in entries:
        if e.get("action") in RESERVE_ACTIONS:
            reserved += e.get("size", 0)
        elif e.get("action") in RELEASE_ACTIONS:
            reserved -= e.get("size", 0)
        peak = max(peak, reserved)
    return peak


def summarize_device(base, device, segments, entries):
    blocks = [b for s in segments for b in (s.get("blocks") or []) if isinstance(b, dict)]
    active = [b for b in blocks if b.get("state") in ALLOCATED_STATES]

    actions = {}
    for e in entries:
        action = e.get("action")
        if isinstance(action, str):
            actions[action] = actions.get(action, 0) + 1

    reserved_bytes = sum(s.get("total_size", 0) for s in segments)
    times = [e["time_us"] for e in entries if e.get("time_us") is not None]

    frames = set()
    stacks = set()
    for e in entries:
        stack = tuple(frame_key(f) for f in frames_of(e))
        frames.update(stack)
        if stack:
            stacks.add(stack)
    for b in blocks:
        frames.update(frame_key(f) for f in frames_of(b))
        for h in b.get("history") or []:
            if isinstance(h, dict):
                frames.update(frame_key(f) for f in frames_of(h))

    return {
        "file": base,
        "rank": rank_of(base),
        "device": device,
        "events": len(entries),
        "actions": dict(sorted(actions.items())),
        "segments": len(segments),
        "reserved_bytes": reserved_bytes,
        "allocated_bytes": sum(b.get("size", 0) for b in active),
        "requested_bytes": sum(b.get("requested_size", b.get("size", 0)) for b in active),
        "peak_allocated_bytes": allocated_in_trace_peak(entries, active),
        "peak_reserved_bytes": reserved_peak(entries, reserved_bytes),
        "first_time_us": min(times) if times else None,
        "last_time_us": max(times) if times else None,
        "unique_frames": len(frames),
        "unique_stacks": len(stacks),
    }


def summarize_file(path):
    """List of output objects for one file (one per device, or one error)."""
    base = os.path.basename(path)
    try:
        segments, traces = read_snapshot(path)
    except LoadError as e:
        return [{"file": base, "error": str(e)}]
    except OSError as e:
        return [{"file": base, "error": f"cannot read file: {e.strerror}"}]

    by_device = {}
    for s in segments:
        device = s.get("device", 0)
        # A device is an ordinal from 0 to 2**31 - 1; a segment on anything else (-1,
        # 2**40, a string) is on no device (memscope warns).
        if isinstance(device, int) and 0 <= device < 2**31:
            by_device.setdefault(device, []).append(s)
    devices = set(by_device) | {d for d, t in enumerate(traces) if t}
    out = []
    for d in sorted(devices):
        entries = traces[d] if 0 <= d < len(traces) else []
        out.append(summarize_device(base, d, by_device.get(d, []), entries))
    return out


def summary_lines(paths):
    """(lines, any_failed) for the given files, in the given order."""
    lines = []
    failed = False
    for path in paths:
        for obj in summarize_file(path):
            failed = failed or "error" in obj
            lines.append(json.dumps(obj, sort_keys=True))
    return lines, failed


def main(argv):
    if len(argv) >= 2 and argv[0] == "--check":
        expected_path, paths = argv[1], argv[2:]
        lines, _ = summary_lines(paths)
        with open(expected_path, encoding="utf-8") as f:
            expected = f.read().splitlines()
        if lines == expected:
            print(f"{expected_path}: up to date ({len(lines)} lines)")
            return 0
        sys.stdout.writelines(
            difflib.unified_diff(
                [l + "\n" for l in expected],
                [l + "\n" for l in lines],
                fromfile=expected_path,
                tofile="recomputed",
            )
        )
        return 1
    if not argv or argv[0].startswith("-"):
        print("usage: summary.py FILE...\n       summary.py --check EXPECTED.jsonl FILE...",
              file=sys.stderr)
        return 2
    failed = False
    for path in argv:
        for obj in summarize_file(path):
            failed = failed or "error" in obj
            print(json.dumps(obj, sort_keys=True), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
