"""Catalog TOML files read once and kept in a precompiled (msgpack) copy.

Parsing TOML in Python costs more than the rest of a plain answer, so the first read of a
catalog file writes its decoded content as msgpack to a cache folder and later reads decode
that (one C call). The copy is keyed on the TOML's bytes (length and CRC-32), so an edited
catalog is parsed afresh; a copy that cannot be written or read is simply not used: the
cache never changes an answer and never makes one fail.

The folder is ``$NAPKIN_CACHE_DIR``, else ``$XDG_CACHE_HOME/napkin``, else ``~/.cache/napkin``
(the tests point ``NAPKIN_CACHE_DIR`` at a temporary folder).
"""

from __future__ import annotations

import os
import zlib
from typing import Any

FORMAT = 1  # bump when the layout of a cached file changes
ENV = "NAPKIN_CACHE_DIR"


def cache_dir() -> str:
    """The folder the precompiled copies live in (it may not exist yet)."""
    given = os.environ.get(ENV)
    if given:
        return given
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "napkin")


def _cache_path(path: str) -> str:
    stem = os.path.splitext(os.path.basename(path))[0]
    where = zlib.crc32(os.path.abspath(path).encode("utf-8", "surrogateescape"))
    return os.path.join(cache_dir(), f"{stem}-{where:08x}.msgpack")


def _plain(value: Any) -> bool:
    """Whether msgpack gives ``value`` back unchanged (TOML dates and times it would not)."""
    if isinstance(value, dict):
        return all(_plain(v) for v in value.values())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return isinstance(value, (str, int, float, bool))


def load_toml(path: str | os.PathLike) -> dict[str, Any]:
    """The content of the TOML file at ``path``, from its precompiled copy when that is current."""
    import msgspec

    path = os.fspath(path)
    with open(path, "rb") as fh:
        raw = fh.read()
    key = [FORMAT, len(raw), zlib.crc32(raw)]
    cached = _cache_path(path)
    try:
        with open(cached, "rb") as fh:
            got = msgspec.msgpack.decode(fh.read())
        if isinstance(got, list) and len(got) == 2 and got[0] == key and isinstance(got[1], dict):
            return got[1]
    except (OSError, ValueError, msgspec.DecodeError):
        pass
    import tomllib

    data = tomllib.loads(raw.decode("utf-8"))
    if _plain(data):
        _write(cached, msgspec.msgpack.encode([key, data]))
    return data


def _write(target: str, payload: bytes) -> None:
    """Write ``payload`` to ``target`` atomically; any failure leaves the cache unused, silently."""
    tmp = f"{target}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(tmp, "wb") as fh:
            fh.write(payload)
        os.replace(tmp, target)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
