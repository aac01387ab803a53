#!/usr/bin/env python3
"""Trunk post-build hook: finishes the offline and security set-up of a build.

Run by Trunk (Trunk.toml [[hooks]]) in the staging directory of every build:
- writes `sw.js`, the service worker (template web/sw.js), with this build's version
  (a hash of every file's content) and the list of files to cache;
- writes the hashes of index.html's inline scripts into its Content-Security-Policy
  template (the `__MEMSCOPE_SCRIPT_HASHES__` placeholder), so the policy allows those
  scripts and nothing else inline;
- writes `single.html`, the single-file page: index.html with the stylesheet, the
  page's script and wasm, and the worker's scripts and wasm inside it (the wasm
  gzip-compressed, in base64), under a Content-Security-Policy that allows its own
  inline script and style by hash and nothing else, no connection at all. It opens
  from file:// or any host; `memscope html` and the page's *Export… → One HTML file*
  put the ranks and the view in at its data marker (`crates/bundle`).
Standard library only.
"""

import base64
import gzip
import hashlib
import json
import os
import re
import sys

# Where the ranks, the view and the anomalies go (memscope_bundle::DATA_MARKER).
DATA_MARKER = "<!--memscope:embedded-data-->"


def sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


def packed(path: str) -> str:
    """A file gzip-compressed, in base64 (the page inflates it with DecompressionStream)."""
    with open(path, "rb") as f:
        data = f.read()
    return base64.b64encode(gzip.compress(data, 9, mtime=0)).decode()


def raw_text(path: str, what: str) -> str:
    """A file's text for a <script> or <style> element: it must not end the element."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if re.search(r"</(script|style)", text, re.I):
        raise SystemExit(f"postbuild.py: {what} contains a closing tag; cannot inline it")
    return text


def single_file(staging: str, html: str) -> str:
    """The single-file page made from the built index.html (see the module docs)."""
    name = lambda url: url.rsplit("/", 1)[-1]
    module = re.search(r"<script type=\"?module\"?>(.*?)</script>", html, re.S)
    if not module:
        raise SystemExit("postbuild.py: index.html has no module script to inline")
    app_js = re.search(r"from\s*'([^']+\.js)'", module.group(1))
    app_wasm = re.search(r"module_or_path:\s*'([^']+\.wasm)'", module.group(1))
    css = re.search(r"<link[^>]*\bhref=\"?([^\"\s>]+\.css)\"?[^>]*>", html)
    if not (app_js and app_wasm and css):
        raise SystemExit("postbuild.py: cannot find the page's script, wasm or stylesheet")
    glue = raw_text(os.path.join(staging, name(app_js.group(1))), "the page's script")
    # The page's script: the wasm-bindgen module, then its start from the inlined wasm.
    # Any failure is shown on the page, never only in the console.
    boot = glue + """
// The page as written, before anything runs: Export… → One HTML file makes the next file
// from it (crates/app/src/export_html.rs; memscope_bundle::template_of takes the data out).
window.memscopeSinglePage = '<!DOCTYPE html>' + document.documentElement.outerHTML;
const memscopeInflate = (id) => {
  const text = document.getElementById(id).textContent;
  const bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  return new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'))).arrayBuffer();
};
try {
  const memscopeWasm = await __wbg_init({ module_or_path: await memscopeInflate('memscope-app-wasm') });
  dispatchEvent(new CustomEvent('TrunkApplicationStarted', { detail: { wasm: memscopeWasm } }));
} catch (e) {
  document.body.setAttribute('data-status', 'error');
  const note = document.getElementById('empty-state');
  if (note) note.textContent = 'memscope cannot start in this browser: ' + e;
}
"""
    style = raw_text(os.path.join(staging, name(css.group(1))), "the stylesheet")
    # The worker's whole script, started from a blob: URL by the page (crates/app/src/pool.rs):
    # the crash reporter, the wasm-bindgen bundle, then its wasm inflated in the worker.
    worker = (
        raw_text(os.path.join(staging, "worker-crash.js"), "worker-crash.js")
        + "\n"
        + raw_text(os.path.join(staging, "memscope-worker.js"), "the worker's script")
        # `;`: the bundle ends with a call, which the next line's `(` would continue.
        + "\n;(async () => {\n"
        + "  try {\n"
        + "    const bytes = Uint8Array.from(atob('" + packed(os.path.join(staging, "memscope-worker_bg.wasm")) + "'), (c) => c.charCodeAt(0));\n"
        + "    const wasm = await new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'))).arrayBuffer();\n"
        + "    await wasm_bindgen({ module_or_path: wasm });\n"
        + "  } catch (e) {\n"
        # Never silent: every load is answered with the reason (worker-crash.js).
        + "    memscopeRefuseLoads('inside this file: ' + e);\n"
        + "  }\n"
        + "})();\n"
    )
    # index.html's other inline scripts (the early-drop keeper) stay, allowed by hash.
    kept = [
        sha256(body)
        for attrs, body in re.findall(r"<script(?![^>]*\bsrc=)([^>]*)>(.*?)</script>", html, re.S)
        if "data-csp-bootstrap" not in attrs and "module" not in attrs
    ]
    csp = (
        "default-src 'none'; script-src " + " ".join([sha256(boot)] + kept) + " 'wasm-unsafe-eval'; "
        "worker-src blob:; connect-src 'none'; img-src data: blob:; style-src " + sha256(style) + "; "
        "base-uri 'none'; form-action 'none'"
    )
    out = html
    out = re.sub(r"<script data-csp-bootstrap>.*?</script>", lambda _: f'<meta http-equiv="Content-Security-Policy" content="{csp}">', out, count=1, flags=re.S)
    out = re.sub(r"<base[^>]*>", "", out, count=1)
    out = re.sub(r"<link[^>]*\brel=\"?(modulepreload|preload)\"?[^>]*>", "", out)
    out = out.replace(css.group(0), "<style>" + style + "</style>", 1)
    data = (
        '<script type="text/plain" id="memscope-worker-js">' + worker + "</script>"
        + '<script type="application/octet-stream" id="memscope-app-wasm">' + packed(os.path.join(staging, name(app_wasm.group(1)))) + "</script>"
        + '<script type="module">' + boot + "</script>"
    )
    out = out.replace(module.group(0), "", 1)
    # The data goes at the end of the body, the page's script after it (a module script
    # runs once the document is parsed, so the data is there when it starts).
    if "</body>" in out:
        out = out.replace("</body>", DATA_MARKER + data + "</body>", 1)
    else:
        out = out + DATA_MARKER + data
    return out


def main() -> int:
    staging = os.environ.get("TRUNK_STAGING_DIR")
    source = os.environ.get("TRUNK_SOURCE_DIR", ".")
    if not staging:
        print("postbuild.py: run me as a Trunk hook (TRUNK_STAGING_DIR unset)", file=sys.stderr)
        return 1

    index_path = os.path.join(staging, "index.html")
    with open(index_path, encoding="utf-8") as f:
        html = f.read()
    # Inline scripts other than the CSP bootstrap itself (which runs before the policy).
    scripts = re.findall(r"<script(?![^>]*\bsrc=)([^>]*)>(.*?)</script>", html, re.S)
    hashes = []
    for attrs, body in scripts:
        if "data-csp-bootstrap" in attrs:
            continue
        digest = base64.b64encode(hashlib.sha256(body.encode("utf-8")).digest()).decode()
        hashes.append(f"'sha256-{digest}'")
    if "__MEMSCOPE_SCRIPT_HASHES__" not in html:
        print("postbuild.py: index.html lacks the CSP template", file=sys.stderr)
        return 1
    html = html.replace("__MEMSCOPE_SCRIPT_HASHES__", " ".join(hashes))
    with open(index_path, "w", encoding="utf-8") as f:
        f.write(html)
    single = single_file(staging, html)
    with open(os.path.join(staging, "single.html"), "w", encoding="utf-8") as f:
        f.write(single)

    files = []
    digest = hashlib.sha256()
    for root, _dirs, names in os.walk(staging):
        for name in sorted(names):
            path = os.path.join(root, name)
            rel = os.path.relpath(path, staging).replace(os.sep, "/")
            # The service worker itself, and the single-file page (not part of the site).
            if rel in ("sw.js", "single.html"):
                continue
            files.append(rel)
            with open(path, "rb") as f:
                digest.update(rel.encode())
                digest.update(f.read())
    files.sort()
    version = digest.hexdigest()[:16]
    # The page is cached under its directory URL (how it is opened) too.
    cached = ["./"] + [f for f in files]
    with open(os.path.join(source, "web", "sw.js"), encoding="utf-8") as f:
        sw = f.read()
    sw = sw.replace("'__MEMSCOPE_VERSION__'", json.dumps(version)).replace(
        "__MEMSCOPE_FILES__", json.dumps(cached)
    )
    with open(os.path.join(staging, "sw.js"), "w", encoding="utf-8") as f:
        f.write(sw)
    print(f"postbuild.py: sw.js version {version}, {len(cached)} files; {len(hashes)} script hashes in the CSP; single.html {len(single.encode()):,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
