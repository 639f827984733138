"""Uploads: files a request carries, held in memory and handed to a calculator for one request.

A multipart form is parsed in memory (:func:`read_multipart`, never spooled to disk); each
file becomes an :class:`Upload`. :func:`uploads_as_paths` gives the calculator a text upload
as its request's ``content``, or else a path in a private tmpfs directory removed when the
request ends, and strips that directory from whatever text the answer shows.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from typing import Any, Callable

from napkin.errors import InputError, NapkinError
from napkin.web.guard import MAX_JSON_BYTES

MAX_FIELDS = 200
MAX_FILES = 16  # a run restarted a few times may come as several logs


class Upload:
    """An uploaded file, held in memory: the name it had and its bytes."""

    def __init__(self, filename: str, data: bytes, content_type: str | None = None):
        self.filename = filename
        self.data = data
        self.content_type = content_type

    def __repr__(self) -> str:
        return f"Upload({self.filename!r}, {len(self.data)} bytes)"

    def __str__(self) -> str:
        return self.filename


def is_upload(val: Any) -> bool:
    """An uploaded file, or a list of them (a field that takes several); an empty list is nothing given."""
    return isinstance(val, Upload) or (isinstance(val, list) and bool(val) and all(isinstance(v, Upload) for v in val))


def ram_dir() -> str | None:
    """A RAM-backed directory for uploads (tmpfs), where the platform has one."""
    for d in ("/dev/shm",):
        if os.path.isdir(d) and os.access(d, os.W_OK):
            return d
    return None


def safe_filename(name: str) -> str:
    base = re.sub(r"[^A-Za-z0-9._+-]", "_", os.path.basename(name.replace("\\", "/")))[:120].lstrip(".")
    return base or "upload"


def _as_content(request_type: type, raw: dict[str, Any], uploads: dict[str, Any]) -> dict[str, Any] | None:
    """A single text upload as the request's own ``content``/``filename`` fields, where it has them.

    The ledger takes an uploaded log's text this way, so it is parsed straight from memory.
    """
    from napkin.request import fields

    names = {f.name for f in fields(request_type)}
    if "content" not in names or "filename" not in names:
        return None
    files = [u for v in uploads.values() for u in (v if isinstance(v, list) else [v])]
    if len(files) != 1 or any(raw.get(k) not in (None, "") for k in ("content", "filename")):
        return None
    try:
        text = files[0].data.decode("utf-8")
    except UnicodeDecodeError:  # a binary log (Parquet): read from a path in RAM below
        return None
    out = {k: v for k, v in raw.items() if k not in uploads}
    out["content"] = text
    out["filename"] = safe_filename(files[0].filename)
    return out


@contextmanager
def uploads_as_paths(raw: dict[str, Any], request_type: type | None = None):
    """Give each uploaded file to the calculator from memory, for one request.

    A calculator whose request has ``content`` and ``filename`` (the ledger) gets a text
    upload's text there. Otherwise calculators read files by path (as on the command
    line), and an upload becomes
    ``<tmpfs dir>/<n>/<its own name>`` in a private (0700) directory under /dev/shm,
    which is memory, not disk, and is removed when the request ends. Yields the raw
    values with paths in place of uploads, and a function that strips the private
    directory from any text the report shows (so it reads ``log.csv``, as the CLI would
    for ``--log log.csv``).
    """
    uploads = {k: v for k, v in raw.items() if is_upload(v)}
    if not uploads:
        yield raw, (lambda text: text)
        return
    text_upload = _as_content(request_type, raw, uploads) if request_type is not None else None
    if text_upload is not None:
        yield text_upload, (lambda text: text)
        return
    tmp = tempfile.mkdtemp(prefix="napkin-upload-", dir=ram_dir())
    try:
        out = dict(raw)
        n = 0
        for key, value in uploads.items():
            paths = []
            for up in (value if isinstance(value, list) else [value]):
                sub = os.path.join(tmp, str(n))
                n += 1
                os.mkdir(sub, 0o700)
                path = os.path.join(sub, safe_filename(up.filename))
                with open(path, "wb") as fh:
                    fh.write(up.data)
                paths.append(path)
            out[key] = paths if isinstance(value, list) else paths[0]
        prefix = re.compile(re.escape(tmp) + r"/\d+/")

        def clean(text: str) -> str:
            return prefix.sub("", text)

        try:
            yield out, clean
        except NapkinError as exc:  # an error names the upload as the user knows it, not the server's path
            _clean_error(exc, clean)
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _clean_error(exc: Exception, clean: Callable[[str], str]) -> None:
    """Strip the private upload directory from an error's message and fields, in place.

    Only the error's own attributes are rewritten: one computed from them (UnknownName's ``fix``,
    a read-only property) follows by itself.
    """
    own = vars(exc)
    for attr in ("value", "problem", "fix", "message", "name"):
        if isinstance(own.get(attr), str):
            own[attr] = clean(own[attr])
    exc.args = tuple(clean(a) if isinstance(a, str) else a for a in exc.args)


async def read_multipart(request: Any) -> dict[str, Any]:
    """The form's fields, each file an :class:`Upload` in memory (repeated names become lists)."""
    from starlette.datastructures import UploadFile
    from starlette.formparsers import MultiPartException, MultiPartParser

    class InMemory(MultiPartParser):
        spool_max_size = 0  # SpooledTemporaryFile(max_size=0) never rolls over to disk

    parser = InMemory(request.headers, request.stream(), max_files=MAX_FILES, max_fields=MAX_FIELDS,
                      max_part_size=MAX_JSON_BYTES)
    try:
        form = await parser.parse()
    except MultiPartException as exc:
        raise InputError("body", "multipart form", str(exc), "send one log file and the form's fields") from None
    raw: dict[str, Any] = {}
    try:
        for key, value in form.multi_items():
            if isinstance(value, UploadFile):
                if not value.filename:
                    continue
                await value.seek(0)
                item: Any = Upload(value.filename, await value.read(), value.content_type)
            else:
                item = value
            if key in raw:
                prev = raw[key]
                raw[key] = (prev if isinstance(prev, list) else [prev]) + [item]
            else:
                raw[key] = item
    finally:
        await form.close()
    return raw
