"""The chart library the page draws with: vega, vega-lite and vega-embed as one script.

vl-convert bundles it (nothing is downloaded); ``GET /static/vendor/vega.js`` serves it.
"""

from __future__ import annotations

import gzip
import logging
import os
import re
import threading
from pathlib import Path

log = logging.getLogger("napkin.web")

_bundle: dict[str, bytes] = {}
_bundle_lock = threading.Lock()

BUNDLE_SCRIPT = """
import sys, vl_convert as vlc
head = ("/* vega " + vlc.get_vega_version() + ", vega-lite, vega-embed " + vlc.get_vega_embed_version()
        + ": BSD-3-Clause, (c) the University of Washington Interactive Data Lab; bundled by vl-convert-python. */\\n")
sys.stdout.buffer.write((head + vlc.javascript_bundle()).encode("utf-8"))
"""


def _bundle_cache_path() -> Path | None:
    """~/.cache/napkin/vega-bundle-<vl-convert version>.js: built once per version of vl-convert."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("vl-convert-python")
    except PackageNotFoundError:
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "napkin" / f"vega-bundle-{re.sub(r'[^A-Za-z0-9.]', '_', v)}.js"


def vega_bundle() -> dict[str, bytes]:
    """vega, vega-lite and vega-embed as one script, from vl-convert (nothing is downloaded).

    vl-convert takes ~1.7 s of CPU to bundle them and holds the GIL while it does, so the
    bundle is built in a child process (the server keeps answering), kept in memory and
    cached on disk per vl-convert version, so later starts read it in milliseconds.
    """
    import subprocess
    import sys

    with _bundle_lock:
        if _bundle:
            return _bundle
        cache = _bundle_cache_path()
        data = None
        if cache is not None and cache.is_file():
            data = cache.read_bytes()
        if not data:
            proc = subprocess.run([sys.executable, "-c", BUNDLE_SCRIPT], capture_output=True, timeout=120)
            if proc.returncode != 0 or b"window.vegaEmbed=" not in proc.stdout:
                raise RuntimeError("vl-convert could not bundle the chart library: "
                                   + proc.stderr.decode(errors="replace")[-300:])
            data = proc.stdout
            if cache is not None:
                try:
                    cache.parent.mkdir(parents=True, exist_ok=True)
                    tmp = cache.with_suffix(f".{os.getpid()}.tmp")
                    tmp.write_bytes(data)
                    os.replace(tmp, cache)
                except OSError:
                    log.warning("could not cache the chart library at %s", cache)
        _bundle["raw"] = data
        _bundle["gzip"] = gzip.compress(data, 6)
        return _bundle


def warm_bundle() -> None:
    try:
        vega_bundle()
    except Exception:  # charts are optional; the page still shows every figure
        log.exception("could not build the vega bundle")
