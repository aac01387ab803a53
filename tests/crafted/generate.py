#!/usr/bin/env python3
"""Generate the crafted test inputs in tests/fixtures/crafted/.

    python3 tests/crafted/generate.py

Writes small hand-made inputs that the real corpus does not cover — every pickle
protocol, JSON and gzip encodings of one snapshot, old torch layouts, truncated files,
pickles that must be refused without being executed, and decoder bombs — plus:

  manifest.json    a list of {"file", "expect": "ok"|"error", "error_contains", "note"}:
                   for "error" cases the error message (lowercased) must contain every
                   keyword of error_contains.
  expected.jsonl   tests/reference/summary.py's output over the "ok" files, in manifest
                   order (a valid snapshot with no device prints no line).
  values-pN.pickle / values-pN.tree.json
                   goldens for the pickle decoder itself: one plain-data object per
                   protocol 0..5 and its tagged-JSON rendering (see tree()).

Deterministic: fixed seeds, gzip mtime 0, and PYTHONHASHSEED=0 (the script re-executes
itself with it) so that set iteration order — and so the pickles — never change.
Running it twice gives byte-identical files. Standard library only.

Hostile files (class-instance, global-reduce, stack-global) are written as bytes and are
never unpickled here except by the reference's refusing Unpickler.
"""

import copy
import gzip
import importlib.util
import json
import os
import pickle
import pickletools
import random
import struct
import sys
import types

if os.environ.get("PYTHONHASHSEED") != "0":  # set order of str elements must be fixed
    os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, "PYTHONHASHSEED": "0"})

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "crafted")
REFERENCE = os.path.join(ROOT, "tests", "reference", "summary.py")

MiB = 1 << 20
U64_MAX = 2**64 - 1
CLASS_OPCODES = {"GLOBAL", "STACK_GLOBAL", "INST", "OBJ", "REDUCE", "BUILD", "NEWOBJ",
                 "NEWOBJ_EX", "EXT1", "EXT2", "EXT4", "PERSID", "BINPERSID"}


def load_reference():
    sys.dont_write_bytecode = True  # no __pycache__ next to the reference script
    spec = importlib.util.spec_from_file_location("memscope_reference_summary", REFERENCE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ref = load_reference()

manifest = []  # filled by case()


def write(name, data):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def case(name, data, expect, note, error_contains=()):
    write(name, data)
    manifest.append({"file": name, "expect": expect,
                     "error_contains": list(error_contains), "note": note})


def opcodes(data):
    """Sorted opcode names of a pickle (scanned by pickletools, never executed)."""
    return sorted({op.name for op, _arg, _pos in pickletools.genops(data)})


def plain_pickle(obj, protocol):
    data = pickle.dumps(obj, protocol=protocol)
    bad = CLASS_OPCODES & set(opcodes(data))
    assert not bad, f"protocol {protocol} pickle needs {bad}"
    return data


def reframed(data, cut_at):
    """A protocol 4 pickle of one frame, cut into two frames at the opcode that starts
    at `cut_at` (an offset in `data`)."""
    assert data[2] == pickle.FRAME[0], "one frame after PROTO"
    body = data[11:]
    first, second = body[: cut_at - 11], body[cut_at - 11:]
    framed = lambda part: pickle.FRAME + struct.pack("<Q", len(part)) + part
    return data[:2] + framed(first) + framed(second)


# --------------------------------------------------------------------------- snapshot


def frame(filename, line, name):
    return {"filename": filename, "line": line, "name": name}


def crafted_snapshot():
    """A small but complete snapshot: 2 devices, every action, shared frames."""
    f_main = frame("train.py", 42, "main")
    f_fwd = frame("model.py", 17, "forward")
    f_lin = frame("/opt/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py", 125, "forward")
    f_cpp = frame("??", U64_MAX, "torch::unwind::unwind()")  # C++ frame: line 2**64-1
    f_win = frame("C:\\Users\\dév\\projet\\étape.py", 7, "étape_données")
    # torch deduplicates tracebacks: the same frame dicts and frame lists are shared.
    stack_a = [f_lin, f_fwd, f_main]
    stack_b = [f_cpp, f_fwd, f_main]
    stack_c = [f_win, f_main]

    base0 = 0x7F3A_0000_0000
    small0 = base0 + 0x4000_0000
    exp0 = base0 + 0x8000_0000
    temp0 = base0 + 0x2000_0000
    base1 = 0x7E00_0000_0000
    t0 = 1_760_000_000_000_000
    t1 = 1_760_000_000_500_000

    def segment(device, address, total, blocks, kind="large", expandable=False, frames=()):
        active = [b for b in blocks if b["state"] != "inactive"]
        return {
            "device": device, "address": address, "total_size": total,
            "allocated_size": sum(b["size"] for b in active),
            "active_size": sum(b["size"] for b in active),
            "requested_size": sum(b.get("requested_size", b["size"]) for b in active),
            "stream": 0, "segment_type": kind, "segment_pool_id": (0, 0),
            "is_expandable": expandable, "frames": list(frames), "blocks": blocks,
        }

    segments = [
        segment(0, base0, 20 * MiB, [
            {"address": base0, "size": 8 * MiB, "requested_size": 8_000_000,
             "state": "active_allocated", "frames": stack_a},
            {"address": base0 + 8 * MiB, "size": 4 * MiB, "requested_size": 4_000_000,
             "state": "active_pending_free", "frames": stack_b},
            {"address": base0 + 12 * MiB, "size": 8 * MiB, "requested_size": 0,
             "state": "inactive", "frames": []},
        ], frames=stack_a),
        segment(0, small0, 2 * MiB, [
            # torch <= 2.0 style block: no requested_size -> counts its size (512)
            {"address": small0, "size": 512, "state": "active_allocated", "frames": [f_main]},
            {"address": small0 + 512, "size": 2 * MiB - 512, "requested_size": 0,
             "state": "inactive", "frames": []},
        ], kind="small"),
        segment(0, exp0, 40 * MiB, [
            {"address": exp0, "size": 40 * MiB, "requested_size": 39_999_000,
             "state": "active_allocated", "frames": stack_c},
        ], expandable=True),
        segment(1, base1, 4 * MiB, [
            # active at the end, never seen in the trace: allocated before the window
            {"address": base1, "size": 2 * MiB, "requested_size": 2_000_000,
             "state": "active_allocated", "frames": stack_a},
            # free_requested in the trace with no alloc: before the window, still pending
            {"address": base1 + 2 * MiB, "size": 2 * MiB, "requested_size": 1_500_000,
             "state": "active_pending_free", "frames": stack_b},
        ]),
    ]

    def entry(action, addr, size, time_us=None, frames=None, **extra):
        e = {"action": action, "addr": addr, "size": size, "stream": 0}
        if time_us is not None:
            e["time_us"] = time_us
        if frames is not None:
            e["frames"] = frames
        e.update(extra)
        return e

    trace0 = [
        entry("segment_alloc", base0, 20 * MiB, t0, stack_a),
        entry("alloc", base0, 8_000_000, t0 + 10, stack_a,
              compile_context="[0/0] torch/_dynamo/convert_frame.py:forward"),
        entry("alloc", base0 + 8 * MiB, 4_000_000, None, stack_b),  # no time_us
        entry("alloc", base0 + 12 * MiB, 6_000_000, t0 + 30, stack_a),
        # same address again without a recorded free: the 6 MB allocation ends here
        entry("alloc", base0 + 12 * MiB, 5_000_000, t0 + 40, stack_c),
        entry("free_completed", base0 + 12 * MiB, 5_000_000, t0 + 50),  # no frames
        entry("segment_alloc", temp0, 2 * MiB, t0 + 60, stack_c),
        entry("alloc", temp0, 1_000_000, t0 + 70, stack_c, user_metadata="phase=warmup"),
        entry("free", temp0, 1_000_000, t0 + 80, stack_c),  # freed in one step
        entry("segment_free", temp0, 2 * MiB, t0 + 90, []),  # empty frames: no stack
        entry("free_requested", base0 + 8 * MiB, 4_000_000, t0 + 100, stack_b,
              user_metadata={"step": 3, "tags": ["a", "b"]}),
        entry("segment_map", exp0, 32 * MiB, None, stack_c),
        entry("segment_map", exp0 + 32 * MiB, 16 * MiB, t0 + 120, stack_c),
        entry("segment_unmap", exp0 + 40 * MiB, 8 * MiB, t0 + 130, stack_c),
        entry("alloc", exp0, 39_999_000, t0 + 140, stack_c),
        entry("snapshot", 0, 0, t0 + 150, []),
        {"action": "oom", "size": 2**36, "stream": 0, "device_free": 123_456_789,
         "time_us": t0 + 160, "frames": stack_b},  # no addr
        entry("annotate", base0, 8_000_000, t0 + 170, None,
              user_metadata={"name": "weights", "note": "post-hoc"}),
        entry("prefetch_hint", base0 + 12 * MiB, 1 << 30, t0 + 180, stack_a),  # unknown
        # a free with no alloc in the window: allocated before it, live from the start
        entry("free_completed", base0 + 0x3000_0000, 4096, t0 + 190, stack_b),
    ]
    trace1 = [
        entry("free_requested", base1 + 2 * MiB, 1_500_000, t1, stack_a),
        entry("alloc", base1 + 0x10_0000_0000, 1000, None, [f_main]),
        entry("free_requested", base1 + 0x10_0000_0000, 1000, t1 + 20, [f_main]),
        entry("free_completed", base1 + 0x10_0000_0000, 1000, t1 + 30, [f_main]),
        entry("free_requested", base1 + 3 * MiB, 777, None),
        entry("free_completed", base1 + 3 * MiB, 777, t1 + 50, stack_b),
    ]
    return {
        "segments": segments,
        "device_traces": [trace0, trace1, []],  # device 2: empty trace, not reported
        "allocator_settings": {
            "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True,max_split_size_mb:512",
            "max_split_size": -1,
            "garbage_collection_threshold": 0.8,
            "expandable_segments": True,
            "pinned_num_register_threads": 1,
            "release_lock_on_cudamalloc": False,
            "pinned_use_cuda_host_register": False,
            "roundup_power2_divisions": {"1": 1, "2": 2, ">": 4},
        },
        "external_annotations": [
            {"name": "ProfilerStep#1", "stage": "START", "device": 0, "time_us": t0 + 5},
            {"name": "ProfilerStep#1", "stage": "END", "device": 0, "time_us": t0 + 195},
        ],
        # host memory is not a device: ignored by the per-device summary
        "host_segments": [segment(-1, 0x5555_0000_0000, 2 * MiB, [
            {"address": 0x5555_0000_0000, "size": 2 * MiB, "requested_size": 2 * MiB,
             "state": "active_allocated", "frames": stack_a}])],
        "host_traces": [entry("alloc", 0x5555_0000_0000, 2 * MiB, t0 + 1, stack_a)],
    }


def history_snapshot():
    """Torch 2.0 layout: blocks carry `history` instead of requested_size/frames;
    trace entries have no time_us."""
    f1 = frame("old_train.py", 10, "<module>")
    f2 = frame("old_model.py", 88, "forward")
    f3 = frame("old_model.py", 90, "forward")
    stack = [f2, f1]
    base = 0x7F00_0000_0000
    segments = [{
        "device": 0, "address": base, "total_size": 2 * MiB, "allocated_size": 1536 * 1024,
        "active_size": 1536 * 1024, "stream": 0, "segment_type": "large",
        "blocks": [
            {"address": base, "size": 1 * MiB, "state": "active_allocated",
             "history": [{"addr": base, "real_size": 1_000_000, "frames": stack},
                         {"addr": base, "real_size": 900_000, "frames": [f3, f1]}]},
            {"address": base + MiB, "size": 512 * 1024, "state": "active_pending_free",
             "history": [{"addr": base + MiB, "real_size": 500_000, "frames": stack}]},
            {"address": base + 1536 * 1024, "size": 512 * 1024, "state": "inactive",
             "history": []},
        ],
    }]
    trace = [
        {"action": "segment_alloc", "addr": base, "size": 2 * MiB, "stream": 0, "frames": stack},
        {"action": "alloc", "addr": base, "size": 1_000_000, "stream": 0, "frames": stack},
        {"action": "alloc", "addr": base + MiB, "size": 500_000, "stream": 0, "frames": stack},
        {"action": "free_requested", "addr": base + MiB, "size": 500_000, "stream": 0,
         "frames": stack},
    ]
    return {"segments": segments, "device_traces": [trace]}


class Opaque:
    """Pickled as a class instance: must be refused, never instantiated."""

    def __init__(self):
        self.payload = "harmless"


def class_instance_pickle():
    module = types.ModuleType("memscope_crafted_classes")
    module.Opaque = Opaque
    Opaque.__module__ = module.__name__
    sys.modules[module.__name__] = module
    return pickle.dumps(Opaque(), protocol=4)


# --------------------------------------------------------------------------- hand-written


def deep_lists(n):
    """n nested lists: EMPTY_LIST x n, then APPEND x (n - 1) folds them into one."""
    return pickle.EMPTY_LIST * n + pickle.APPEND * (n - 1) + pickle.STOP


def memo_bomb_list(refs):
    """[[1, 2, 3]] * refs, every item a BINGET of the same memoized list."""
    inner = (pickle.EMPTY_LIST + pickle.MARK + pickle.BININT1 + b"\x01" + pickle.BININT1
             + b"\x02" + pickle.BININT1 + b"\x03" + pickle.APPENDS + pickle.BINPUT + b"\x00"
             + pickle.POP)
    outer = pickle.EMPTY_LIST + pickle.MARK + (pickle.BINGET + b"\x00") * refs + pickle.APPENDS
    return b"\x80\x02" + inner + outer + pickle.STOP


def binunicode(s):
    raw = s.encode("utf-8")
    return pickle.BINUNICODE + struct.pack("<I", len(raw)) + raw


def memo_bomb_64(levels=64):
    """{"segments": [], "device_traces": [], "user_data": x64} with x0 = [1] and
    x_{i+1} = [x_i, x_i]: 2**64 leaves if expanded, 65 lists if shared."""

    def put(i):
        return (pickle.BINPUT + bytes([i])) if i % 2 == 0 else (pickle.LONG_BINPUT + struct.pack("<I", i))

    def get(i):
        return (pickle.BINGET + bytes([i])) if i % 2 == 0 else (pickle.LONG_BINGET + struct.pack("<I", i))

    out = [b"\x80\x02", pickle.EMPTY_DICT, pickle.MARK,
           binunicode("segments"), pickle.EMPTY_LIST,
           binunicode("device_traces"), pickle.EMPTY_LIST,
           binunicode("user_data"),
           pickle.EMPTY_LIST, pickle.BININT1, b"\x01", pickle.APPEND, put(0)]
    for i in range(1, levels + 1):
        out += [pickle.POP, pickle.EMPTY_LIST, pickle.MARK, get(i - 1), get(i - 1),
                pickle.APPENDS, put(i)]
    out += [pickle.SETITEMS, pickle.STOP]
    return b"".join(out)


# --------------------------------------------------------------------------- values


def values_object(protocol):
    """Plain data using every type `protocol` expresses without GLOBAL."""
    shared = ["shared list", 1, (2, 3)]
    obj = {
        "none": None,
        "true": True,
        "false": False,
        "ints": [0, 1, -1, 127, 255, 256, 65535, 65536, -65536, 2**31 - 1, -2**31, 2**31,
                 -2**31 - 1, 2**32, 2**63 - 1, 2**63, -2**63, -2**63 - 1, U64_MAX, 2**64,
                 -2**70, 10**40],
        "floats": [0.0, -0.0, 1.0, -2.5, 0.1, 1e300, -1e-300, 5e-324, 1.7976931348623157e308,
                   float("inf"), float("-inf"), float("nan"), 1760000000000000.0],
        "strs": ["", "ascii", "héllo wörld €", "emoji 🎉", "line\nbreak", "cr\rlf\r\n",
                 "back\\slash \\u0041", 'quote " and \'', "nul\x00byte", "tab\t", "sub\x1a",
                 "x" * 300],
        "tuples": [(), (1,), (1, "two"), (1, "two", 3.0), (1, 2, 3, 4, 5)],
        "lists": [[], [1], [1, "two"], [1, "two", 3.0], [1, 2, 3, 4, 5]],
        "dicts": [{}, {"a": 1}, {1: "int key", (1, 2): "tuple key", None: "none key",
                                 -5: [], "": {}}],
        "nested": [[[[[]]]], {"x": [{"y": ({"z": [()]},)}]}],
        # > 256 memoized objects first, so later memo indices need LONG_BINPUT/LONG_BINGET
        "many": [f"s{i}" for i in range(300)],
        "shared_twice": [shared, shared],
    }
    if protocol >= 3:
        obj["bytes"] = [b"", b"\x00\x01\xffshort", bytes(range(256)) + b"0123456789" * 4 + b"abcd"]
    if protocol >= 4:
        obj["sets"] = [set(), {1, 2, 3}, {"a", "b", (4, 5)}, frozenset(),
                       frozenset({"x", 2.5, -7})]
    if protocol >= 5:
        obj["bytearrays"] = [bytearray(), bytearray(b"\x00mutable\xff")]
    return obj


def tree(v):
    """Tagged-JSON rendering of a decoded pickle value (shared refs expanded)."""
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, int):
        return {"int": str(v)}
    if isinstance(v, float):
        return {"float": repr(v)}
    if isinstance(v, str):
        return {"str": v}
    if isinstance(v, bytes):
        return {"bytes": v.hex()}
    if isinstance(v, bytearray):
        return {"bytearray": v.hex()}
    if isinstance(v, list):
        return {"list": [tree(x) for x in v]}
    if isinstance(v, tuple):
        return {"tuple": [tree(x) for x in v]}
    if isinstance(v, dict):
        return {"dict": [[tree(k), tree(x)] for k, x in v.items()]}
    if isinstance(v, (set, frozenset)):
        elems = sorted((tree(x) for x in v), key=lambda t: json.dumps(t, sort_keys=True))
        return {"set" if isinstance(v, set) else "frozenset": elems}
    raise TypeError(type(v))


# --------------------------------------------------------------------------- main


def summaries(name):
    """Reference output objects for one crafted file, without the file name."""
    out = []
    for obj in ref.summarize_file(os.path.join(OUT, name)):
        obj = dict(obj)
        obj.pop("file")
        out.append(obj)
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    for name in os.listdir(OUT):  # this directory is entirely generated
        os.remove(os.path.join(OUT, name))

    snap = crafted_snapshot()

    # 1. one snapshot, every encoding -------------------------------------------------
    encodings = []
    for p in range(6):
        data = plain_pickle(snap, p)
        name = f"snap-p{p}.pickle"
        case(name, data, "ok", f"crafted snapshot, pickle protocol {p}; opcodes: "
             + " ".join(opcodes(data)))
        encodings.append(name)
    json_bytes = json.dumps(snap, ensure_ascii=False).encode("utf-8")
    case("snap.json", json_bytes, "ok",
         "crafted snapshot as JSON (UTF-8, line 2**64-1 kept exact)")
    case("snap-p4.pickle.gz", gzip.compress(plain_pickle(snap, 4), mtime=0), "ok",
         "gzip-compressed protocol-4 pickle (detected by the 1f 8b magic, not the name)")
    case("snap.json.gz", gzip.compress(json_bytes, mtime=0), "ok", "gzip-compressed JSON")
    encodings += ["snap.json", "snap-p4.pickle.gz", "snap.json.gz"]
    case("job-ranks_Rank_012-of-rank-3.pickle", plain_pickle(snap, 4), "ok",
         "same as snap-p4; rank is the first rank<N>/rank_<N>/rank-<N> match, "
         "case-insensitive: 12")
    base = summaries("snap-p0.pickle")
    assert [d["device"] for d in base] == [0, 1], base
    for name in encodings:
        assert summaries(name) == base, f"{name} summary differs from snap-p0.pickle"

    # 2. 9-byte LONG1, sets/bytes/bytearray ---------------------------------------------
    big = copy.deepcopy(snap)
    addr = 2**63 + 4096
    big["device_traces"][1] += [
        {"action": "alloc", "addr": addr, "size": 4096, "stream": 0, "time_us": 1_760_000_000_600_000},
        {"action": "free_completed", "addr": addr, "size": 4096, "stream": 0},
    ]
    data = plain_pickle(big, 4)
    assert any(op.name == "LONG1" and arg == addr and len(pickle.encode_long(arg)) == 9
               for op, arg, _ in pickletools.genops(data))
    case("long1-9byte.pickle", data, "ok",
         f"protocol 4; trace addr {addr} = 2**63+4096 is a 9-byte LONG1")

    sets = copy.deepcopy(snap)
    sets["device_traces"][0][10]["user_metadata"] = {
        "set": {"a", "b", 3}, "frozenset": frozenset({"x", (1, 2)}), "bytes": b"\x00raw\xff"}
    data = plain_pickle(sets, 4)
    case("set.pickle", data, "ok", "protocol 4; user_metadata holds set, frozenset, bytes; "
         "opcodes: " + " ".join(opcodes(data)))
    sets["device_traces"][0][10]["user_metadata"]["bytearray"] = bytearray(b"\x01\x02mutable")
    data = plain_pickle(sets, 5)
    case("set-p5.pickle", data, "ok", "protocol 5; as set.pickle plus a bytearray (BYTEARRAY8)")

    # 3. legacy list and torch 2.0 history blocks ------------------------------------------
    case("legacy-list.pickle", plain_pickle(snap["segments"], 4), "ok",
         "legacy torch.cuda.memory_snapshot(): a bare list of segments (devices 0 and 1)")
    case("history-blocks.pickle", plain_pickle(history_snapshot(), 4), "ok",
         "torch 2.0: blocks with history [{addr, real_size, frames}] and no "
         "requested_size/frames; trace entries without time_us")

    # 4. truncated and junk ------------------------------------------------------------------
    full = plain_pickle(snap, 4)
    ops = list(pickletools.genops(full))
    # SHORT_BINUNICODE and LONG1 are: opcode byte, 1-byte length, payload
    mid_str = next(pos + 2 + len(arg.encode()) // 2 for op, arg, pos in ops
                   if op.name == "SHORT_BINUNICODE" and len(arg.encode()) >= 8)
    mid_long = next(pos + 2 + len(pickle.encode_long(arg)) // 2 for op, arg, pos in ops
                    if op.name == "LONG1" and len(pickle.encode_long(arg)) >= 6)
    cuts = {
        2: "right after PROTO",
        6: "inside the FRAME length",
        mid_str: "in the middle of a SHORT_BINUNICODE string",
        mid_long: "in the middle of a LONG1 int",
        len(full) // 2: "half of the file",
        len(full) - 1: "just before STOP",
    }
    for n in sorted(cuts):
        case(f"trunc-{n}.pickle", full[:n], "error",
             f"snap-p4.pickle cut to {n} bytes: {cuts[n]}", ["truncated"])
    case("empty.pickle", b"", "error", "0 bytes", ["empty"])
    rnd = random.Random(20240601).randbytes(4096)
    case("random.bin", rnd, "error", "4 KiB of seeded random bytes (read as a pickle)")
    case("json-truncated.json", json_bytes[: len(json_bytes) // 2], "error",
         "snap.json cut in half", ["truncated"])
    case("not-a-snapshot.json", b'{"hello": 1}\n', "error", "valid JSON, not a snapshot",
         ["not a snapshot"])

    # 4b. damaged where only the frames or the end show it (issue 15) --------------------
    ops = list(pickletools.genops(full))
    # An opcode in the middle of the file, and the one after it.
    k = next(i for i, (op, _arg, pos) in enumerate(ops) if pos > len(full) // 2
             and op.name == "BININT1")
    at, after = ops[k][2], ops[k + 1][2]
    two = reframed(full, ops[k + 2][2])
    assert ref.load_pickle(two) == ref.load_pickle(full)
    case("frames-two.pickle", two, "ok",
         "snap-p4.pickle with its frame cut in two at an opcode boundary")
    case("frame-opcode-deleted.pickle", two[:at] + two[after:], "error",
         f"frames-two.pickle with the BININT1 at byte {at} deleted: every opcode is intact, "
         "only the first frame's length shows it (CPython's C unpickler accepts it)",
         ["frame"])
    case("trailing-garbage.pickle", full + b"garbage", "error",
         "snap-p4.pickle followed by 7 bytes", ["after the end"])
    case("trailing-pickle.pickle", full + full, "error",
         "snap-p4.pickle twice", ["after the end"])
    case("devices-not-ordinals.json", json.dumps({
        "segments": [
            {"device": d, "address": 4096 * i, "total_size": 4096, "stream": 0, "blocks": []}
            for i, d in enumerate([-1, 2**40, 2**64, 0])],
        "device_traces": [[{"action": "alloc", "addr": 0, "size": 512, "stream": 0}]],
    }).encode(), "ok", "segments on devices -1, 2**40, 2**64 (on no device, with a warning) "
         "and 0")
    case("frame-without-line.json", json.dumps({
        "segments": [],
        "device_traces": [[{"action": "alloc", "addr": 0, "size": 512, "stream": 0, "frames": [
            {"filename": "a.py", "name": "f"}, {"filename": "a.py", "line": 0, "name": "f"}]}]],
    }).encode(), "ok", "a frame without line and the same frame at line 0: two frames")

    # 5. refused: must never be executed ----------------------------------------------------
    data = class_instance_pickle()
    case("class-instance.pickle", data, "error",
         "protocol-4 pickle of a class instance (STACK_GLOBAL, NEWOBJ, BUILD); "
         "STACK_GLOBAL comes first", ["stack_global"])
    case("global-reduce.pickle", b"cos\nsystem\n(S'echo harmless'\ntR.", "error",
         "hand-written protocol 0: GLOBAL 'os system', MARK, STRING, TUPLE, REDUCE, STOP "
         "(never unpickle it)", ["global"])
    case("stack-global.pickle",
         b"\x80\x04" + pickle.SHORT_BINUNICODE + b"\x02os" + pickle.SHORT_BINUNICODE
         + b"\x06system" + pickle.STACK_GLOBAL + pickle.SHORT_BINUNICODE + b"\x0decho harmless"
         + pickle.TUPLE1 + pickle.REDUCE + pickle.STOP, "error",
         "hand-written protocol 4: STACK_GLOBAL os.system then REDUCE (never unpickle it)",
         ["stack_global"])

    # 6. bombs -----------------------------------------------------------------------------
    case("deep-100k.pickle", deep_lists(100_000), "error",
         "100,000 nested lists: EMPTY_LIST x100000, APPEND x99999, STOP", ["nest"])
    case("memo-bomb-list.pickle", memo_bomb_list(2_000_000), "error",
         "a valid pickle: a list of 2,000,000 BINGET references to one memoized [1, 2, 3]; "
         "not a snapshot (a list whose items are not dicts): its 2,000,000 handles go past "
         "the 32 MiB budget of values memscope does not read (CPython: not a snapshot)", ["snapshot"])
    case("memo-bomb-64.pickle", memo_bomb_64(64), "ok",
         "{segments: [], device_traces: [], user_data: x64}, x0=[1], x(i+1)=[x(i), x(i)] via "
         "BINGET/LONG_BINGET: 2**64 leaves if expanded; a valid snapshot with no devices "
         "(no summary line)")
    case("unicode8-bomb.pickle",
         b"\x80\x04" + pickle.BINUNICODE8 + struct.pack("<Q", 2**60) + b"0123456789", "error",
         "BINUNICODE8 declaring 2**60 bytes, 10 follow", ["bytes"])
    case("bytes8-bomb.pickle",
         b"\x80\x04" + pickle.BINBYTES8 + struct.pack("<Q", 2**60) + b"0123456789", "error",
         "BINBYTES8 declaring 2**60 bytes, 10 follow", ["bytes"])
    case("long4-bomb.pickle",
         b"\x80\x02" + pickle.LONG4 + struct.pack("<i", 2**31 - 1) + b"\x01" * 16, "error",
         "LONG4 declaring 2**31-1 bytes, 16 follow", ["bytes"])

    # values: goldens for the generic pickle decoder --------------------------------------
    for p in range(6):
        data = plain_pickle(values_object(p), p)
        decoded = ref.load_pickle(data)  # refusing unpickler: proves no GLOBAL is needed
        name = f"values-p{p}.pickle"
        case(name, data, "error",
             f"generic-decoding golden (tree: values-p{p}.tree.json), protocol {p}; "
             "not a snapshot; opcodes: " + " ".join(opcodes(data)), ["not a snapshot"])
        write(f"values-p{p}.tree.json",
              (json.dumps(tree(decoded), indent=1, ensure_ascii=False) + "\n").encode("utf-8"))

    # every error case fails in the reference too, with the manifest's keywords
    for m in manifest:
        if m["expect"] == "error":
            (obj,) = ref.summarize_file(os.path.join(OUT, m["file"]))
            assert "error" in obj, m["file"]
            for word in m["error_contains"]:
                assert word in obj["error"].lower(), (m["file"], word, obj["error"])

    write("manifest.json", (json.dumps(manifest, indent=1, ensure_ascii=False) + "\n").encode())
    ok = [os.path.join(OUT, m["file"]) for m in manifest if m["expect"] == "ok"]
    lines, failed = ref.summary_lines(ok)
    assert not failed
    write("expected.jsonl", "".join(l + "\n" for l in lines).encode())

    total = 0
    for name in sorted(os.listdir(OUT)):
        size = os.path.getsize(os.path.join(OUT, name))
        total += size
        print(f"{size:>10}  {name}")
    print(f"{total:>10}  total ({len(manifest)} manifest entries, {len(lines)} expected lines)")


if __name__ == "__main__":
    main()
