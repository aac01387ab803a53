"""``memscope.show``: the memscope page inline in Jupyter, offline.

The output is an iframe of the page bundled in the wheel, served by a local server in
the kernel's process (:mod:`memscope._server`), and a script that fetches the snapshots
from that server and hands them to the page with the postMessage handshake the page
supports (README, "Other ways in": ``PING`` until ``PONG``, then
``{memscope: [{name, buffer}]}``). Nothing goes over the network: the browser must run
on the kernel's machine (or reach 127.0.0.1 of it through a forwarded port).
"""

from __future__ import annotations

import html
import json
import os
import uuid

_SCRIPT = """
(async () => {
  const frame = document.getElementById(%(frame_id)s);
  const status = document.getElementById(%(status_id)s);
  try {
    const items = await Promise.all(%(files)s.map(async (f) => {
      const r = await fetch(f.url);
      if (!r.ok) throw new Error(f.name + ': HTTP ' + r.status);
      return { name: f.name, buffer: await r.arrayBuffer() };
    }));
    if (items.length === 0) return;
    const w = frame.contentWindow;
    await new Promise((resolve) => {
      const timer = setInterval(() => w.postMessage('PING', '*'), 100);
      window.addEventListener('message', function pong(e) {
        if (e.source === w && e.data === 'PONG') {
          clearInterval(timer);
          window.removeEventListener('message', pong);
          resolve();
        }
      });
    });
    w.postMessage({ memscope: items }, '*', items.map((i) => i.buffer));
    status.textContent = '';
  } catch (e) {
    status.textContent = 'memscope: ' + e.message;
  }
})();
"""


class Shown:
    """What :func:`show` returns: rendered by Jupyter as the page (``_repr_html_``)."""

    def __init__(self, page_url: str, files: list[dict], height: int):
        self.page_url = page_url
        self.files = files
        self.height = height

    def _repr_html_(self) -> str:
        ident = "memscope-" + uuid.uuid4().hex[:12]
        script = _SCRIPT % {
            "frame_id": json.dumps(ident + "-frame"),
            "status_id": json.dumps(ident + "-status"),
            "files": json.dumps(self.files),
        }
        return (
            f'<div class="memscope-show" id="{ident}">'
            f'<iframe id="{ident}-frame" src="{html.escape(self.page_url)}" '
            f'style="width:100%;height:{int(self.height)}px;border:0" '
            'allow="clipboard-write"></iframe>'
            f'<div id="{ident}-status"></div>'
            f"<script>{script}</script></div>"
        )

    def __repr__(self) -> str:
        names = ", ".join(f["name"] for f in self.files)
        return f"<memscope page at {self.page_url} showing {names or 'nothing'}>"


def show(what=None, height: int = 720) -> Shown:
    """Shows snapshots in the memscope page inline in Jupyter: a ``Snapshot`` (from a
    file, bytes or ``load_snapshot``), a path, or a list of them (several ranks open in
    the fleet view). Works offline: the page comes from the wheel, the files from a
    server on 127.0.0.1 in this process."""
    from . import Snapshot
    from ._server import shared

    server = shared()
    if what is None:
        items = []
    elif isinstance(what, (list, tuple)):
        items = list(what)
    else:
        items = [what]
    files = []
    for item in items:
        if isinstance(item, Snapshot):
            name = os.path.basename(item.path) or "snapshot.pickle"
            source = item._data if item._data is not None else item.path
        else:
            source = os.fspath(item)
            name = os.path.basename(source)
            if not os.path.isfile(source):
                from ._memscope import MemscopeError

                raise MemscopeError(f"{source}: no such file")
        if "." not in name:
            name += ".pickle"
        files.append({"name": name, "url": server.add(name, source)})
    return Shown(server.page_url, files, height)
