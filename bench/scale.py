#!/usr/bin/env python3
"""Generate large benchmark snapshots by scaling a real PyTorch memory snapshot up.

memscope's benchmarks need inputs of ~12 MiB, ~120 MiB and ~1.2 GiB (and multi-rank
sets). They are derived from a real trace, not invented: the source snapshot (default
`fullstep-19k-events-cpp-frames.pickle`, one full training step recorded with Python +
C++ frames) is repeated as N training iterations, and the output is streamed as a
protocol-4 pickle with the byte structure CPython's pickler (i.e. torch's
`_dump_snapshot`) gives such an object. Nothing here is committed: files go to
/tmp/memscope-bench unless told otherwise. Standard library only (Python 3.11).

Usage
    python3 bench/scale.py --preset small          # ~12 MiB   -> /tmp/memscope-bench/small.pickle
    python3 bench/scale.py --preset medium         # ~120 MiB  -> .../medium.pickle
    python3 bench/scale.py --preset large          # ~1.2 GiB  -> .../large.pickle
    python3 bench/scale.py --preset ranks8         # 8 x 12 MiB -> .../ranks8/rank{0..7}.pickle
    python3 bench/scale.py --target-mib 50 [--out FILE]
    python3 bench/scale.py --iterations 7 [--out FILE]
    python3 bench/scale.py --target-mib 30 --ranks 4 --seed 1 [--out DIR]
    python3 bench/scale.py --preset small --verify # also load it back and check it
Options: --source PATH, --out-dir DIR (default /tmp/memscope-bench), --gap-us N (idle
time between iterations, default 5000). After writing, each file's size, event count,
iteration count and the seconds taken are printed (plus peak RSS of this script).

Scheme (per device trace; the source has one device)
  * Iteration 0 is the source trace as recorded (the warm-up step: it contains the
    source's segment_alloc events). Iterations 1..K-1 repeat it, shifted in time: the
    time map of iteration k is  t -> t + k * (span + gap),  span = last - first time_us
    over the source's trace entries and external annotations, gap = --gap-us.
  * Addresses, sizes, streams and frames are kept: the caching allocator reuses its
    blocks at the same addresses in every step.
  * Allocations still live at the end of an iteration. In the source 876 allocations
    (40.9 GB) are never freed in the window: 292 grads (no Python frames: allocated
    by the autograd engine), 582 AdamW exp_avg/exp_avg_sq tensors (created lazily by
    this first optimizer step) and 2 small ones; the source has no free without an
    alloc. Repeating their allocs would put a second live allocation at the same
    address. Offsetting their addresses by a per-iteration stride was rejected:
    allocated bytes would grow by ~41 GB per iteration (4 TB after 100 iterations), far
    beyond the 61 GB of segments the snapshot holds. Keeping them live and dropping
    their allocs from later iterations was rejected too: 515 of the 582 optimizer-state
    blocks lie on addresses the same step's forward/backward used before the state
    existed, so later iterations would overlap live state. Instead, iteration k >= 1
    starts, in the idle gap before its first entry, with a free_requested +
    free_completed pair for each allocation left live by iteration k-1 (as
    `zero_grad(set_to_none=True)` does for grads; 1 us apart, the last 1 us before the
    iteration's first entry). Every iteration then replays from the same state, so the
    semantics in docs/semantics.md give a bounded, periodic allocated curve whose peak
    is the source's peak (checked with tests/reference/summary.py), and no address
    ever holds two live allocations. (Other sources: a free whose alloc is not in the
    window is replayed in iteration 0 only, so that it reveals one pre-window
    allocation and not one per iteration.)
  * Segment events (segment_alloc/free/map/unmap) are kept in iteration 0 only: after
    the warm-up step the caching allocator serves every request from cached
    segments, as in a real long job. The trace's net segment change is then the
    source's (or that of the part kept after a cut), so the replayed reserved bytes
    start at the source's initial value (here 19.7 GB), grow to the snapshot's 61.1 GB
    during iteration 0 and stay there: never negative, never growing without bound.
  * The snapshot's `segments` (the state at the end) and `allocator_settings` are the
    source's; the last iteration ends in exactly the source's end state, so they stay
    consistent with the trace. `external_annotations` are repeated per iteration with
    the same time map.
  * --target-mib: sizes are estimated from one dry run of 4 iterations (to a null
    sink). Whole iterations are used when a count lands within 3 % of the target (one
    iteration is ~3.1 MB); otherwise the smallest count above the target, with the
    oldest entries cut, as torch's ring buffer does: the trace then starts partway
    into iteration 0 (annotation START/END pairs ending before the first kept entry
    are dropped with it; frees of cut allocations reveal pre-window allocations, as
    semantics.md defines). A cut lands within ~1 %. --iterations K writes K whole
    iterations.
  * --ranks R writes rank0.pickle ... rank{R-1}.pickle, each jittered by its own RNG
    (seeded from --seed and the rank): a clock offset of 0-2 ms, a per-iteration time
    stretch of +-0.3 %, a per-iteration gap of 0.8-1.25 x --gap-us, and about 10 % of
    the allocations freed within the iteration get a requested size up to ~1.5 %
    smaller (alloc and its frees alike). Allocations live at the end are never resized,
    so they still match the snapshot's blocks.

Byte structure (what CPython's pickler produces, checked byte for byte in --verify)
  * Every str, dict, list and non-empty tuple is MEMOIZEd; a str or frame dict is written
    once and referenced afterwards with BINGET/LONG_BINGET (dict keys too).
  * Frames lists are shared the way torch shares them (py_symbolize gives one list
    object per captured traceback): in the source, free_completed reuses its
    free_requested's list and an alloc reuses the list of the segment_alloc that served
    it, and blocks in `segments` share the list of their alloc. The output keeps that
    sharing per iteration: the first entry of an iteration that uses a source list gets
    a fresh list (EMPTY_LIST MEMOIZE MARK <memo refs to the shared frame dicts> APPENDS),
    later entries of the same iteration reference it (LONG_BINGET); in the last
    iteration allocations still live at the end reference the block's list written in
    `segments`, as in the source. The inserted frees share one fresh list per pair with
    the alloc's frames.
  * APPENDS/SETITEMS batched by 1000; FRAME opcodes exactly where CPython's framer puts
    them (a frame is closed at the first object boundary at or beyond 64 KiB).
  With --iterations 1 the output is byte-identical to the source, and for any K,
  pickle.dumps(pickle.load(out), protocol=4) == out.

How it is fast
  Iteration 0 is written by a small streaming pickler (a re-implementation of
  pickle._Pickler.save for plain data). For later iterations, every trace entry shape is
  compiled once into byte pieces with holes for time_us and for the memo index of a
  shared frames list (everything else -- keys, action string, frame dicts -- is a memo
  reference with a fixed index by then), so writing an entry is a few bytes
  concatenations. The output is written frame by frame; memory holds the source and
  the compiled pieces only.

Measured (2-CPU VM, Python 3.11.7, default source, writing to /tmp; "generate" excludes
the ~1.1 s dry run that --target-mib and the presets do first; RSS = ru_maxrss)
  preset  bytes (vs target)        iterations  events     generate  RSS      pickle.load
  small   12,536,424 (-0.4 %)       4            79,982    1.1 s    117 MiB  0.14 s
  medium  124,305,729 (-1.2 %)     40           811,142    1.7 s    117 MiB  2.2 s, 531 MiB
  large   1,288,569,321 (+0.0 %)  415         8,427,392    9.8 s    118 MiB  37 s, 5.3 GiB
  ranks8  8 x ~12,536,000          4 each        79,982    1.0 s each
  --iterations 1 reproduces each of the nine corpus snapshots byte for byte.
"""

import argparse
import collections
import math
import os
import pickle
import random
import resource
import sys
import time
from pickle import (APPEND, APPENDS, BINFLOAT, BINGET, BININT, BININT1, BININT2,
                    BINUNICODE, BINUNICODE8, EMPTY_DICT, EMPTY_LIST, EMPTY_TUPLE,
                    FRAME, LONG1, LONG4, LONG_BINGET, MARK, MEMOIZE, NEWFALSE, NEWTRUE,
                    NONE, POP, POP_MARK, PROTO, SETITEM, SETITEMS, SHORT_BINUNICODE,
                    STOP, TUPLE, TUPLE1, TUPLE2, TUPLE3, encode_long)
from struct import pack

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_NAME = "fullstep-19k-events-cpp-frames.pickle"
DEFAULT_SOURCES = (
    os.path.join(HERE, "..", "tests", "fixtures", "corpus", "real", SOURCE_NAME),
    os.path.join("/work/shared/corpus/real", SOURCE_NAME),
)
DEFAULT_OUT_DIR = "/tmp/memscope-bench"
PRESETS = {  # name -> (target MiB per file, ranks)
    "small": (12, None),
    "medium": (120, None),
    "large": (1228.8, None),  # 1.2 GiB
    "ranks8": (12, 8),
}

FRAME_TARGET = 64 * 1024  # pickle._Framer._FRAME_SIZE_TARGET
BATCH = 1000  # pickle._Pickler._BATCHSIZE
TUPLE_CODES = (EMPTY_TUPLE, TUPLE1, TUPLE2, TUPLE3)
SEGMENT_ACTIONS = frozenset(("segment_alloc", "segment_free", "segment_map", "segment_unmap"))
FREE_ACTIONS = frozenset(("free_requested", "free_completed", "free"))
# Used for the inserted frees when the source has no free of that kind (kept alive here
# so that their memo identity is stable).
FREE_REQUESTED = "free_requested"
FREE_COMPLETED = "free_completed"


# --------------------------------------------------------------------------------------
# Streaming pickler


class FreshDict:
    """A dict written fresh (EMPTY_DICT MEMOIZE ...), never referenced again."""

    __slots__ = ("items",)

    def __init__(self, items):
        self.items = items


class FreshList:
    """A list written fresh; its memo index is recorded in Writer.slots[slot]."""

    __slots__ = ("items", "slot")

    def __init__(self, items, slot=None):
        self.items = items
        self.slot = slot


class Ref:
    """A memo reference to something written fresh earlier (memo index idx)."""

    __slots__ = ("idx",)

    def __init__(self, idx):
        self.idx = idx


class Hole:
    """Placeholder while compiling a template: 't' = time_us value, 'r' = list ref."""

    __slots__ = ("kind",)

    def __init__(self, kind):
        self.kind = kind


TIME_HOLE = Hole("t")
REF_HOLE = Hole("r")


class Custom:
    """A value written by a callback (streamed lists)."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn


class NeedLive(Exception):
    """Compiling met an object that is not memoized yet: write this entry live."""


class Template:
    __slots__ = ("pieces", "shape", "n_new", "list_off", "points", "p0", "p1", "p2")

    def __init__(self, pieces, kinds, n_new, list_off, points):
        self.pieces = pieces
        self.shape = {(): 0, ("t",): 1, ("t", "r"): 2, ("r",): 3, ("r", "t"): 4}[kinds]
        self.n_new = n_new
        self.list_off = list_off
        self.points = points  # (offset without holes, holes before)
        self.p0 = pieces[0]
        self.p1 = pieces[1] if len(pieces) > 1 else b""
        self.p2 = pieces[2] if len(pieces) > 2 else b""


def enc_int(v):
    """pickle._Pickler.save_long for protocol >= 2."""
    if 0x800000000000 <= v < 0x80000000000000:  # time_us, addresses: 7-byte LONG1
        return b"\x8a\x07" + v.to_bytes(7, "little")
    if v >= 0:
        if v <= 0xFF:
            return BININT1 + bytes((v,))
        if v <= 0xFFFF:
            return BININT2 + pack("<H", v)
    if -0x80000000 <= v <= 0x7FFFFFFF:
        return BININT + pack("<i", v)
    e = encode_long(v)
    if len(e) < 256:
        return LONG1 + bytes((len(e),)) + e
    return LONG4 + pack("<i", len(e)) + e


def enc_get(i):
    return BINGET + bytes((i,)) if i < 256 else LONG_BINGET + pack("<I", i)


class Writer:
    """Protocol-4 pickler writing frame by frame, as pickle._Pickler does.

    The memo counter `n` counts every MEMOIZE; `memo` maps id() of memoized shared
    objects (source objects, kept alive by the caller) to their index. Fresh* objects
    only advance the counter. In compile mode the same code writes into a scratch
    buffer, records object boundaries and holes, and refuses to memoize anything new.
    """

    def __init__(self, raw):
        self.raw = raw
        self.buf = bytearray()
        self.written = 0
        self.memo = {}
        self.n = 0
        self.slots = {}
        self.compiling = False

    def tell(self):
        """Offset in the file of the next byte (the open frame's header included)."""
        return self.written + 9 + len(self.buf)

    def commit(self, force=False):
        buf = self.buf
        if len(buf) >= FRAME_TARGET or (force and buf):
            if len(buf) >= 4:
                self.raw.write(FRAME + pack("<Q", len(buf)))
                self.written += 9
            self.raw.write(buf)
            self.written += len(buf)
            self.buf = bytearray()

    def boundary(self):
        """An object boundary (start of pickle._Pickler.save)."""
        if self.compiling:
            self.points.append((len(self.buf), len(self.holes)))
        elif len(self.buf) >= FRAME_TARGET:
            self.commit()

    def memoize(self, obj):
        if self.compiling:
            raise NeedLive
        self.memo[id(obj)] = (self.n, obj)
        self.n += 1
        self.buf += MEMOIZE

    def memoize_fresh(self):
        self.buf += MEMOIZE
        if self.compiling:
            self.cn += 1
            return self.cn - 1
        self.n += 1
        return self.n - 1

    def write_large(self, header, payload):
        if self.compiling:
            raise NeedLive
        self.commit(force=True)
        self.raw.write(header)
        self.raw.write(payload)
        self.written += len(header) + len(payload)

    def save(self, obj):
        self.boundary()
        t = type(obj)
        if t is int:
            self.buf += enc_int(obj)
            return
        if obj is None:
            self.buf += NONE
            return
        if t is bool:
            self.buf += NEWTRUE if obj else NEWFALSE
            return
        if t is float:
            self.buf += BINFLOAT + pack(">d", obj)
            return
        x = self.memo.get(id(obj))
        if x is not None:
            self.buf += enc_get(x[0])
            return
        if t is str:
            e = obj.encode("utf-8", "surrogatepass")
            n = len(e)
            if n <= 0xFF:
                self.buf += SHORT_BINUNICODE + bytes((n,)) + e
            elif n > 0xFFFFFFFF:
                self.write_large(BINUNICODE8 + pack("<Q", n), e)
            elif n >= FRAME_TARGET:
                self.write_large(BINUNICODE + pack("<I", n), e)
            else:
                self.buf += BINUNICODE + pack("<I", n) + e
            self.memoize(obj)
        elif t is FreshDict:
            self.buf += EMPTY_DICT
            self.memoize_fresh()
            self.batch_setitems(obj.items)
        elif t is FreshList:
            self.buf += EMPTY_LIST
            idx = self.memoize_fresh()
            if obj.slot is not None:
                if self.compiling:
                    self.list_off = idx
                else:
                    self.slots[obj.slot] = idx
            self.batch_appends(obj.items)
        elif t is Ref:
            self.buf += enc_get(obj.idx)
        elif t is Hole:
            if not self.compiling:
                raise AssertionError("hole outside compile")
            self.holes.append((len(self.buf), obj.kind))
        elif t is Custom:
            obj.fn(self)
        elif t is dict:
            self.buf += EMPTY_DICT
            self.memoize(obj)
            self.batch_setitems(list(obj.items()))
        elif t is list:
            self.buf += EMPTY_LIST
            self.memoize(obj)
            self.batch_appends(obj)
        elif t is tuple:
            self.save_tuple(obj)
        else:
            raise TypeError(f"cannot write {t.__name__} (only plain snapshot data)")

    def save_tuple(self, obj):
        n = len(obj)
        if n == 0:
            self.buf += EMPTY_TUPLE
            return
        if n <= 3:
            for x in obj:
                self.save(x)
            m = self.memo.get(id(obj))
            if m is not None:  # recursive tuple (cannot happen in snapshots)
                self.buf += POP * n + enc_get(m[0])
            else:
                self.buf += TUPLE_CODES[n]
                self.memoize(obj)
            return
        self.buf += MARK
        for x in obj:
            self.save(x)
        m = self.memo.get(id(obj))
        if m is not None:
            self.buf += POP_MARK + enc_get(m[0])
            return
        self.buf += TUPLE
        self.memoize(obj)

    def batch_appends(self, items):
        total = len(items)
        i = 0
        while True:
            n = min(BATCH, total - i)
            if n > 1:
                self.buf += MARK
                for x in items[i:i + n]:
                    self.save(x)
                self.buf += APPENDS
            elif n == 1:
                self.save(items[i])
                self.buf += APPEND
            if n < BATCH:
                return
            i += BATCH

    def batch_setitems(self, items):
        total = len(items)
        i = 0
        while True:
            n = min(BATCH, total - i)
            if n > 1:
                self.buf += MARK
                for k, v in items[i:i + n]:
                    self.save(k)
                    self.save(v)
                self.buf += SETITEMS
            elif n == 1:
                k, v = items[i]
                self.save(k)
                self.save(v)
                self.buf += SETITEM
            if n < BATCH:
                return
            i += BATCH

    def compile(self, obj):
        """Dry-run save(obj) into byte pieces split at its holes, or None."""
        saved = self.buf
        self.buf = bytearray()
        self.compiling = True
        self.points, self.holes, self.cn, self.list_off = [], [], 0, None
        try:
            self.save(obj)
            out = bytes(self.buf)
        except NeedLive:
            return None
        finally:
            self.buf = saved
            self.compiling = False
        pieces, prev = [], 0
        for off, _ in self.holes:
            pieces.append(out[prev:off])
            prev = off
        pieces.append(out[prev:])
        return Template(tuple(pieces), tuple(k for _, k in self.holes), self.cn,
                        self.list_off, tuple(self.points))

    def split_write(self, chunk, points, hole_lens):
        """Append a compiled chunk, closing the frame at the right object boundary."""
        L = len(self.buf)
        for off, nh in points:
            a = off + sum(hole_lens[:nh])
            if a > 0 and L + a >= FRAME_TARGET:
                self.buf += chunk[:a]
                self.commit()
                self.buf += chunk[a:]
                return
        self.buf += chunk


# --------------------------------------------------------------------------------------
# Plan: what every iteration of a device trace contains


class DevicePlan:
    def __init__(self, entries, block_lists, strs):
        self.entries = entries
        self.block_lists = block_lists
        n = len(entries)
        live = {}  # addr -> alloc index
        members = {}
        completed = []
        requested = set()
        self.drop = set()  # left out of iterations >= 1
        for i, e in enumerate(entries):
            a = e.get("action")
            if a in SEGMENT_ACTIONS:
                self.drop.add(i)
            elif a == "alloc":
                ad = e.get("addr")
                if ad in live:  # a free was not recorded: the old one ends here
                    completed.append(live[ad])
                live[ad] = i
                members[i] = [i]
            elif a in FREE_ACTIONS:
                ad = e.get("addr")
                j = live.get(ad)
                if j is None:
                    self.drop.add(i)  # pre-window allocation: reveal it once
                    continue
                members[j].append(i)
                if a == "free_requested":
                    requested.add(j)
                else:
                    del live[ad]
                    completed.append(j)
        self.persistent = sorted(live.values())
        self.pending = requested & set(self.persistent)
        self.transient = [members[j] for j in sorted(set(completed))]
        self.strs = strs
        times = [e.get("time_us") for e in entries]
        self.has_time = bool(entries) and all(type(t) is int for t in times)
        self.times = times

    def seq(self, kind, cut=0):
        """[(role, slot key)] for an iteration of this kind: 'first', 'mid', 'last',
        'only' (K == 1). role = (kind char, source index, frames mode)."""
        ents = self.entries
        evs = []
        if kind in ("mid", "last"):
            for p in self.persistent:
                if p not in self.pending:
                    evs.append(("R", p))
                evs.append(("C", p))
            evs += [("s", i) for i in range(len(ents)) if i not in self.drop]
        else:
            evs = [("s", i) for i in range(cut, len(ents))]
        last = kind in ("last", "only")
        seen = set()
        out = []
        for kc, i in evs:
            fr = ents[i].get("frames")
            if type(fr) is not list:
                mode, key = None, None
            elif kc == "s" and last and id(fr) in self.block_lists:
                mode, key = "c", None
            else:
                key = id(fr) if kc == "s" else ("ins", i)
                mode = "r" if key in seen else "f"
                seen.add(key)
            out.append(((kc, i, mode), key))
        return out

    def entry(self, role, tv, fs, sizes):
        """The trace entry of `role` with time value tv and frames value fs."""
        kc, i, _ = role
        items = []
        for k, v in self.entries[i].items():
            if k == "time_us":
                v = tv
            elif k == "frames" and fs is not None:
                v = fs
            elif k == "action" and kc != "s":
                v = self.strs[kc]
            elif k == "size" and kc == "s" and i in sizes:
                v = sizes[i]
            items.append((k, v))
        return FreshDict(items)


def collect_ids(obj, lists, seen):
    """ids of all lists reachable from obj (segments: blocks' frames lists)."""
    stack = [obj]
    while stack:
        o = stack.pop()
        if id(o) in seen:
            continue
        t = type(o)
        if t is list:
            seen.add(id(o))
            lists.add(id(o))
            stack.extend(o)
        elif t is dict:
            seen.add(id(o))
            stack.extend(o.values())
        elif t is tuple:
            stack.extend(o)


class Source:
    def __init__(self, path):
        with open(path, "rb") as f:
            head = f.read(2)
            f.seek(0)
            if head == b"\x1f\x8b":  # .pickle.gz
                import gzip
                with gzip.open(f) as g:
                    data = g.read()
            else:
                data = f.read()
        self.raw_size = len(data)
        # --iterations 1 reproduces a protocol-4 source byte for byte
        self.is_proto4 = data[:2] == b"\x80\x04"
        self.obj = pickle.loads(data)
        del data
        d = self.obj
        if type(d) is not dict or type(d.get("device_traces")) is not list:
            raise SystemExit(f"{path}: not a snapshot with device_traces")
        self.path = path
        block_lists = set()
        for k, v in d.items():
            if k not in ("device_traces", "external_annotations"):
                collect_ids(v, block_lists, set())
        strs = {"R": FREE_REQUESTED, "C": FREE_COMPLETED}
        for tr in d["device_traces"]:
            for e in tr:
                a = e.get("action")
                if a == "free_requested":
                    strs["R"] = a
                elif a == "free_completed":
                    strs["C"] = a
        self.plans = [DevicePlan(tr, block_lists, strs) for tr in d["device_traces"]]
        ts = [t for p in self.plans for t in p.times if type(t) is int]
        self.anns = d.get("external_annotations")
        if type(self.anns) is list:
            ts += [a.get("time_us") for a in self.anns
                   if type(a) is dict and type(a.get("time_us")) is int]
        self.lo, self.hi = (min(ts), max(ts)) if ts else (0, 0)
        self.per_iter = sum(len(p.seq("mid")) for p in self.plans)

    def events(self, K, cuts):
        return sum(len(p.entries) - c + (K - 1) * len(p.seq("mid"))
                   for p, c in zip(self.plans, cuts))


# --------------------------------------------------------------------------------------
# Generation


class Jitter:
    """Per-rank timing and size jitter from a seeded RNG (None = exact repetition)."""

    def __init__(self, seed, rank, src):
        self.rng = random.Random(f"memscope-bench:{seed}:{rank}")
        self.offset = self.rng.randint(0, 2000)
        self.sizes = []
        for p in src.plans:
            sizes = {}
            for grp in p.transient:
                size = p.entries[grp[0]].get("size")
                if type(size) is int and size > 64 and self.rng.random() < 0.1:
                    new = size - self.rng.randint(1, max(1, size // 64))
                    for i in grp:
                        if p.entries[i].get("size") == size:
                            sizes[i] = new
            self.sizes.append(sizes)


def iteration_maps(src, K, gap, jit):
    """[(B_k, s_k)]: iteration k maps t -> B_k + (t - lo) * s_k."""
    out = []
    b = src.lo + (jit.offset if jit else 0)
    span = src.hi - src.lo
    for _ in range(K):
        s = 1 + jit.rng.uniform(-0.003, 0.003) if jit else 1
        out.append((b, s))
        g = gap * jit.rng.uniform(0.8, 1.25) if jit else gap
        b += math.ceil(span * s) + round(g)
    return out


def tmap(t, lo, B, s):
    if type(t) is not int:
        return t
    return B + (t - lo) if s == 1 else B + round((t - lo) * s)


def generate(src, K, cuts, raw, gap, jit=None, probe=None):
    """Write the scaled snapshot to raw. Returns ([events per device], bytes written)."""
    d = src.obj
    lo = src.lo
    maps = iteration_maps(src, K, gap, jit)
    w = Writer(raw)
    raw.write(PROTO + b"\x04")
    w.written = 2
    counts = []

    def device_stream(dev, plan):
        def fn(w):
            sizes = jit.sizes[dev] if jit else {}
            kinds = ["only"] if K == 1 else ["first"] + ["mid"] * (K - 2) + ["last"]
            seqs = {}
            total = len(plan.entries) - cuts[dev] + (K - 1) * len(plan.seq("mid"))
            counts.append(total)
            w.buf += EMPTY_LIST
            w.memoize_fresh()
            tpls = {}
            g = 0
            prev_last = None  # mapped time of the previous iteration's last entry
            for k, kind in enumerate(kinds):
                if kind not in seqs:
                    seqs[kind] = plan.seq(kind, cuts[dev] if k == 0 else 0)
                seq = seqs[kind]
                B, s = maps[k]
                times = [tmap(plan.times[r[1]], lo, B, s) if r[0] == "s" else None
                         for r, _ in seq]
                n_ins = sum(1 for r, _ in seq if r[0] != "s")
                if n_ins and plan.has_time and n_ins < len(times):
                    b = times[n_ins]
                    a = prev_last if prev_last is not None else b - n_ins
                    for j in range(n_ins):
                        times[j] = max(a, b - (n_ins - j))
                if times:
                    prev_last = times[-1]
                slots = {}
                w.slots = slots
                if probe is not None:
                    probe.setdefault(dev, []).append(w.tell())
                if k == 0:
                    cum = probe.setdefault(("cum", dev), []) if probe is not None else None
                    for (role, key), t in zip(seq, times):
                        if g % BATCH == 0 and total - g > 1:
                            w.buf += MARK
                        if cum is not None:
                            cum.append(w.tell())
                        mode = role[2]
                        fs = None
                        if mode == "f":
                            fs = FreshList(plan.entries[role[1]]["frames"], key)
                        elif mode == "r":
                            fs = Ref(slots[key])
                        w.save(plan.entry(role, t, fs, sizes))
                        g += 1
                        if g % BATCH == 0 or g == total:
                            w.buf += APPENDS if (g - 1) % BATCH else APPEND
                    if cum is not None:
                        cum.append(w.tell())
                    continue
                g = write_compiled(w, plan, seq, times, tpls, slots, sizes, g, total)
            if probe is not None:
                probe[dev].append(w.tell())
        return Custom(fn)

    def annotations():
        anns = src.anns
        out = []
        first_kept = None
        if any(cuts):
            ts = [p.times[c] for p, c in zip(src.plans, cuts)
                  if c < len(p.times) and type(p.times[c]) is int]
            first_kept = min(ts) if ts else None
        keep0 = list(range(len(anns)))
        if first_kept is not None:
            end_time = {}
            open_ = collections.defaultdict(list)
            for i, a in enumerate(anns):
                if type(a) is not dict:
                    continue
                if a.get("stage") == "START":
                    open_[a.get("name")].append(i)
                elif a.get("stage") == "END" and open_[a.get("name")]:
                    end_time[open_[a.get("name")].pop()] = a.get("time_us")
            def end(i, a):
                return end_time.get(i, a.get("time_us")) if type(a) is dict else None
            keep0 = [i for i, a in enumerate(anns)
                     if type(end(i, a)) is not int or end(i, a) >= first_kept]
        for k in range(K):
            B, s = maps[k]
            for i in (keep0 if k == 0 else range(len(anns))):
                a = anns[i]
                if type(a) is not dict:
                    out.append(a)
                    continue
                out.append(FreshDict([(kk, tmap(v, lo, B, s) if kk == "time_us" else v)
                                      for kk, v in a.items()]))
        return FreshList(out)

    items = []
    for key, value in d.items():
        if key == "device_traces":
            def traces(w):
                w.buf += EMPTY_LIST
                w.memoize_fresh()
                w.batch_appends([device_stream(i, p) for i, p in enumerate(src.plans)])
            value = Custom(traces)
        elif key == "external_annotations" and type(value) is list:
            value = annotations()
            if probe is not None:
                def probed(w, value=value):
                    start = w.tell()
                    w.save(value)
                    probe["ann_bytes"] = w.tell() - start
                value = Custom(probed)
        items.append((key, value))
    w.boundary()
    w.buf += EMPTY_DICT
    w.memoize_fresh()
    w.batch_setitems(items)
    w.buf += STOP
    w.commit(force=True)
    return counts, w.written


def write_compiled(w, plan, seq, times, tpls, slots, sizes, g, total):
    """Write one iteration (k >= 1) from compiled templates; returns the entry count."""
    entries = plan.entries
    for (role, key), t in zip(seq, times):
        if g % BATCH == 0 and total - g > 1:
            w.buf += MARK
        tpl = tpls.get(role)
        if tpl is None:
            mode = role[2]
            fs = None
            if mode == "f":
                fs = FreshList(entries[role[1]]["frames"], key)
            elif mode == "r":
                fs = REF_HOLE
            tpl = w.compile(plan.entry(role, TIME_HOLE, fs, sizes))
            if tpl is None:  # something new to memoize: write it live this time
                if mode == "r":
                    fs = Ref(slots[key])
                w.save(plan.entry(role, t, fs, sizes))
                g += 1
                if g % BATCH == 0 or g == total:
                    w.buf += APPENDS if (g - 1) % BATCH else APPEND
                continue
            tpls[role] = tpl
        buf = w.buf
        if len(buf) >= FRAME_TARGET:
            w.commit()
            buf = w.buf
        shape = tpl.shape
        if shape == 1:
            tb = enc_int(t)
            chunk = tpl.p0 + tb + tpl.p1
            hl = (len(tb),)
        elif shape == 2:
            tb = enc_int(t)
            rb = enc_get(slots[key])
            chunk = b"".join((tpl.p0, tb, tpl.p1, rb, tpl.p2))
            hl = (len(tb), len(rb))
        elif shape == 0:
            chunk = tpl.p0
            hl = ()
        elif shape == 3:
            rb = enc_get(slots[key])
            chunk = tpl.p0 + rb + tpl.p1
            hl = (len(rb),)
        else:  # ("r", "t")
            rb = enc_get(slots[key])
            tb = enc_int(t)
            chunk = b"".join((tpl.p0, rb, tpl.p1, tb, tpl.p2))
            hl = (len(rb), len(tb))
        if tpl.list_off is not None:
            slots[key] = w.n + tpl.list_off
        w.n += tpl.n_new
        if len(buf) + len(chunk) <= FRAME_TARGET:
            buf += chunk
        else:
            w.split_write(chunk, tpl.points, hl)
        g += 1
        if g % BATCH == 0 or g == total:
            w.buf += APPENDS if (g - 1) % BATCH else APPEND
    return g


# --------------------------------------------------------------------------------------
# Choosing the iteration count and cut for a target size


class NullSink:
    def write(self, b):
        return len(b)


def choose(src, target, gap, tolerance=0.03):
    """(K, cuts) landing near `target` bytes, estimated from one dry run of 4 iterations.

    Whole iterations if one count lands within `tolerance`; otherwise the smallest count
    above the target, with the oldest entries of iteration 0 cut (a ring buffer's view)
    to land on it. Never cuts all of iteration 0 (then one iteration fewer, uncut)."""
    probe = {}
    _, s4 = generate(src, 4, [0] * len(src.plans), NullSink(), gap, probe=probe)
    devs = range(len(src.plans))
    delta = sum(probe[d][2] - probe[d][1] for d in devs) + probe.get("ann_bytes", 0) / 4
    if delta <= 0:
        raise SystemExit("the source has no trace entries to repeat; use --iterations")

    def size(K):  # whole iterations; K == 1 is the source itself, byte for byte
        if K == 1:
            return src.raw_size if src.is_proto4 else s4 - 3 * delta
        return s4 - (4 - K) * delta

    K = max(1, round((target - size(2)) / delta) + 2)
    K = min((k for k in (K - 1, K, K + 1) if k >= 1), key=lambda k: abs(size(k) - target))
    if abs(size(K) - target) <= tolerance * target:
        return K, [0] * len(src.plans)
    if size(K) < target:
        K += 1
    # cut: same fraction of iteration 0 on every device, dropping about `excess` bytes
    excess = size(K) - target
    cums = [probe[("cum", d)] for d in devs]

    def dropped(frac):
        return sum(c[round(frac * (len(c) - 1))] - c[0] for c in cums)

    if K > 1 and excess >= 0.95 * dropped(1.0):
        return K - 1, [0] * len(src.plans)
    def cut(excess):
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            if dropped(mid) < excess:
                lo = mid
            else:
                hi = mid
        return [round(lo * (len(c) - 1)) for c in cums]

    cuts = cut(excess)
    # the estimate ignores that cut-away first occurrences (frame dicts) move later:
    # measure once and correct
    _, got = generate(src, K, cuts, NullSink(), gap)
    if abs(got - target) > 0.01 * target:
        cuts = cut(excess + got - target)
    return K, cuts


# --------------------------------------------------------------------------------------
# Verification (--verify): load the output back and compare with the source


def region_histograms(data, regions):
    """Counts of the opcodes starting inside each [start, end) region."""
    import pickletools
    hists = [collections.Counter() for _ in regions]
    for op, _, pos in pickletools.genops(data):
        for (a, b), h in zip(regions, hists):
            if a <= pos < b:
                h[op.name] += 1
    return hists


def verify(path, src, K, cuts, gap, jit):
    """Load the output back with CPython's pickle and check it against the source."""
    t0 = time.time()
    with open(path, "rb") as f:
        data = f.read()
    obj = pickle.loads(data)
    t_load = time.time() - t0
    traces = obj["device_traces"]
    n = sum(len(t) for t in traces)
    expected = src.events(K, cuts)
    assert n == expected, (n, expected)
    assert list(obj) == list(src.obj), "top-level keys differ"
    # every entry's frames is a list of frame dicts shared through the memo
    frame_ids = collections.Counter()
    list_ids = set()
    for tr in traces:
        for e in tr:
            fr = e.get("frames")
            if type(fr) is list:
                list_ids.add(id(fr))
                for f in fr:
                    assert type(f) is dict
                    frame_ids[id(f)] += 1

    def frame_objects(tr_list):
        by_content = collections.defaultdict(set)
        for tr in tr_list:
            for e in tr:
                for f in e.get("frames") or ():
                    by_content[tuple(sorted(f.items()))].add(id(f))
        return {k: len(v) for k, v in by_content.items()}

    # each frame dict of the source is one object in the output, referenced everywhere
    # (the source itself has a few equal frames as distinct dicts: same count expected)
    assert frame_objects(traces) == frame_objects(src.obj["device_traces"]), \
        "frame dicts not shared as in the source"
    # byte structure: CPython pickling the loaded object gives the same bytes
    same = pickle.dumps(obj, protocol=4) == data
    del obj, traces
    print(f"verify {path}: pickle.loads {t_load:.2f}s; {n} events as expected; "
          f"{len(frame_ids)} distinct frame dicts referenced {sum(frame_ids.values())} "
          f"times from {len(list_ids)} distinct frames lists; "
          f"pickle.dumps(pickle.loads(file)) == file: {same}")
    assert same, "output differs from CPython's pickling of the same object"
    # opcodes per trace entry: the source's trace vs one repeated iteration (device 0)
    ns = len(src.plans[0].entries) if src.plans else 0
    n0 = ns - cuts[0] + (K - 1) * len(src.plans[0].seq("mid")) if ns else 0
    if not ns or not n0:
        return
    import io
    p_src, p_out = {}, {}
    sbuf = io.BytesIO()  # the source as CPython pickles it (== the file for protocol 4)
    generate(src, 1, [0] * len(src.plans), sbuf, gap, probe=p_src)
    sdata = sbuf.getvalue()
    if src.is_proto4:
        assert len(sdata) == src.raw_size
    generate(src, K, cuts, NullSink(), gap, jit, probe=p_out)
    (hs,) = region_histograms(sdata, [(p_src[0][0], p_src[0][-1])])
    regions = [(p_out[0][0], p_out[0][-1])]
    k = min(1, K - 1)
    regions.append((p_out[0][k], p_out[0][k + 1]))
    ho, hi = region_histograms(data, regions)
    ni = len(src.plans[0].seq("mid")) if k else ns - cuts[0]
    print(f"  opcodes per trace entry, device 0: source trace ({ns} entries), "
          f"output trace ({n0} entries), output iteration {k} ({ni} entries)")
    for op in sorted(set(hs) | set(ho), key=lambda o: -(hs[o] + ho[o])):
        print(f"    {op:18} {hs[op] / ns:8.3f} {ho[op] / n0:8.3f} {hi[op] / ni:8.3f}")
    print(f"    {'bytes':18} {(p_src[0][-1] - p_src[0][0]) / ns:8.1f} "
          f"{(p_out[0][-1] - p_out[0][0]) / n0:8.1f} "
          f"{(regions[1][1] - regions[1][0]) / ni:8.1f}")


# --------------------------------------------------------------------------------------


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", choices=sorted(PRESETS),
                    help="small=12 MiB, medium=120 MiB, large=1.2 GiB, ranks8=8 x 12 MiB")
    ap.add_argument("--target-mib", type=float, help="size of each file, in MiB")
    ap.add_argument("--iterations", type=int, help="whole training iterations")
    ap.add_argument("--ranks", type=int,
                    help="write rank0..rank{R-1}.pickle, each with its own jitter")
    ap.add_argument("--seed", type=int, default=0, help="seed of the per-rank jitter")
    ap.add_argument("--source", help=f"snapshot to scale (default: {SOURCE_NAME})")
    ap.add_argument("--out", help="output file (a directory with --ranks)")
    ap.add_argument("--out-dir", default=DEFAULT_OUT_DIR,
                    help="directory of the default output names (default %(default)s)")
    ap.add_argument("--gap-us", type=int, default=5000,
                    help="idle time between iterations (default %(default)s)")
    ap.add_argument("--verify", action="store_true",
                    help="load the output back with pickle and check its structure")
    args = ap.parse_args(argv)

    target, ranks = args.target_mib, args.ranks
    if args.preset:
        ptarget, pranks = PRESETS[args.preset]
        target = target if target is not None else ptarget
        ranks = ranks if ranks is not None else pranks
    if target is not None and args.iterations is not None:
        ap.error("give --target-mib or --iterations, not both")
    if target is None and args.iterations is None:
        ap.error("give --preset, --target-mib or --iterations")
    if args.iterations is not None and args.iterations < 1:
        ap.error("--iterations must be >= 1")

    src_path = args.source or next((os.path.normpath(p) for p in DEFAULT_SOURCES
                                    if os.path.exists(p)), None)
    if not src_path:
        raise SystemExit("no source snapshot found; give --source")
    t0 = time.time()
    src = Source(src_path)

    if args.iterations is not None:
        K, cuts = args.iterations, [0] * len(src.plans)
        name = f"scaled-{K}it"
    else:
        K, cuts = choose(src, round(target * 1024 * 1024), args.gap_us)
        name = args.preset or f"scaled-{target:g}MiB"
    t_plan = time.time() - t0

    if ranks:
        out_dir = args.out or os.path.join(args.out_dir, name)
        outs = [(r, os.path.join(out_dir, f"rank{r}.pickle")) for r in range(ranks)]
    else:
        outs = [(None, args.out or os.path.join(args.out_dir, name + ".pickle"))]
    os.makedirs(os.path.dirname(os.path.abspath(outs[0][1])), exist_ok=True)

    print(f"source {src_path}: {src.raw_size} bytes, "
          f"{sum(len(p.entries) for p in src.plans)} events; "
          f"{src.per_iter} events per repeated iteration; planning {t_plan:.2f}s")
    for rank, path in outs:
        t1 = time.time()
        jit = Jitter(args.seed, rank, src) if rank is not None else None
        tmp = path + ".tmp"
        with open(tmp, "wb", buffering=1 << 20) as f:
            counts, size = generate(src, K, cuts, f, args.gap_us, jit)
        os.replace(tmp, path)
        dt = time.time() - t1
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        msg = (f"{path}: {size} bytes ({size / 2**20:.1f} MiB"
               + (f", target {target:g} MiB, {100 * (size / 2**20 / target - 1):+.1f}%"
                  if target else "")
               + f"), {sum(counts)} events, {K} iterations"
               + (f" (first cut by {sum(cuts)} events)" if any(cuts) else "")
               + f", {dt:.1f}s, peak RSS {rss:.0f} MiB")
        print(msg, flush=True)
        if args.verify:
            verify(path, src, K, cuts, args.gap_us, jit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
