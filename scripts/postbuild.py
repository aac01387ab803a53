#!/usr/bin/env python3
"""Trunk post-build hook: finishes the offline and security set-up of a build.

Run by Trunk (Trunk.toml [[hooks]]) in the staging directory of every build:
- writes `sw.js`, the service worker (template web/sw.js), with this build's version
  (a hash of every file's content) and the list of files to cache;
- writes the hashes of index.html's inline scripts into its Content-Security-Policy
  template (the `__MEMSCOPE_SCRIPT_HASHES__` placeholder), so the policy allows those
  scripts and nothing else inline.
Standard library only.
"""

import base64
import hashlib
import json
import os
import re
import sys


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

    files = []
    digest = hashlib.sha256()
    for root, _dirs, names in os.walk(staging):
        for name in sorted(names):
            path = os.path.join(root, name)
            rel = os.path.relpath(path, staging).replace(os.sep, "/")
            if rel == "sw.js":
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
    print(f"postbuild.py: sw.js version {version}, {len(cached)} files; {len(hashes)} script hashes in the CSP")
    return 0


if __name__ == "__main__":
    sys.exit(main())
