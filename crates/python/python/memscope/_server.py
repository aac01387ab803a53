"""A local HTTP server for the page bundled in the wheel, and the files it is shown.

The page (``memscope/page``, the release build of ``./scripts/build-dist /memscope/``)
is served under ``/memscope/``, as the build expects; snapshots handed to
:func:`memscope.show` are served under ``/files/<n>/<name>`` with
``Access-Control-Allow-Origin: *`` so the notebook's output (another origin) can fetch
them and pass them to the page with postMessage. Only 127.0.0.1 by default: nothing
leaves the machine.
"""

from __future__ import annotations

import mimetypes
import os
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

PREFIX = "/memscope/"
PAGE_DIR = Path(__file__).resolve().parent / "page"

_TYPES = {
    ".wasm": "application/wasm",
    ".js": "text/javascript",
    ".mjs": "text/javascript",
    ".webmanifest": "application/manifest+json",
}


def page_dir() -> Path:
    """The bundled page, or an error saying how to bundle it."""
    from ._memscope import MemscopeError

    if not (PAGE_DIR / "index.html").is_file():
        raise MemscopeError(
            f"the memscope page is not bundled in this install ({PAGE_DIR} has no "
            "index.html): install with ./scripts/build-python, which builds it"
        )
    return PAGE_DIR


class Server:
    """A server thread; files are registered with :meth:`add`."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0):
        self.page = page_dir()
        self._files: list[tuple[str, object]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(SimpleHTTPRequestHandler):
            def log_message(self, *args):  # quiet: a notebook is not a server log
                pass

            def do_GET(self):
                path = unquote(urlsplit(self.path).path)
                if path.startswith("/files/"):
                    return self._file(path)
                if path == "/" or path == PREFIX.rstrip("/"):
                    self.send_response(302)
                    self.send_header("Location", PREFIX)
                    self.end_headers()
                    return
                if not path.startswith(PREFIX):
                    return self.send_error(404, "not under " + PREFIX)
                rel = path[len(PREFIX):] or "index.html"
                target = (server.page / rel).resolve()
                if server.page not in target.parents and target != server.page:
                    return self.send_error(403)
                if target.is_dir():
                    target = target / "index.html"
                if not target.is_file():
                    return self.send_error(404)
                kind = _TYPES.get(target.suffix) or mimetypes.guess_type(target.name)[0]
                self._send(target.read_bytes(), kind or "application/octet-stream")

            def _file(self, path: str):
                parts = path.split("/")
                try:
                    index = int(parts[2])
                    _, source = server._files[index]
                except (IndexError, ValueError):
                    return self.send_error(404)
                if isinstance(source, (bytes, bytearray)):
                    body = bytes(source)
                else:
                    try:
                        body = Path(source).read_bytes()
                    except OSError as e:
                        return self.send_error(404, str(e))
                self._send(body, "application/octet-stream", cors=True)

            def _send(self, body: bytes, kind: str, cors: bool = False):
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-cache")
                if cors:
                    self.send_header("Access-Control-Allow-Origin", "*")
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        self.host, self.port = self.httpd.server_address[:2]
        self.base = f"http://{self.host}:{self.port}"

    @property
    def page_url(self) -> str:
        return self.base + PREFIX

    def add(self, name: str, source) -> str:
        """Registers a file (a path, or bytes) and returns its address."""
        with self._lock:
            self._files.append((name, source))
            index = len(self._files) - 1
        return f"{self.base}/files/{index}/{quote(os.path.basename(name))}"

    def start(self) -> "Server":
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def serve_forever(self):
        self.httpd.serve_forever()


_shared: Server | None = None
_shared_lock = threading.Lock()


def shared() -> Server:
    """The process's server, started on first use (a free port on 127.0.0.1)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Server().start()
        return _shared
