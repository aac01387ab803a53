"""``python -m memscope serve [--port N] [--host H] [FILES...]``: the bundled page on a
local server (http://127.0.0.1:8080/memscope/ by default), offline. Each FILE gets an
address that opens it (``#url=``)."""

from __future__ import annotations

import argparse
import os
import sys

from ._server import Server


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m memscope", description=__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve the bundled memscope page locally")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument("files", nargs="*", help="snapshots to open (each gets an address)")
    args = ap.parse_args(argv)
    from ._memscope import MemscopeError

    try:
        server = Server(args.host, args.port)
    except (MemscopeError, OSError) as e:
        print(f"memscope: {e}", file=sys.stderr)
        return 2
    print(f"memscope page: {server.page_url}", flush=True)
    for f in args.files:
        if not os.path.isfile(f):
            print(f"memscope: {f}: no such file", file=sys.stderr)
            return 2
        print(f"  {f}: {server.page_url}#url={server.add(f, os.path.abspath(f))}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
