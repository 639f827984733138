"""Files a user names: regular files only, opened without blocking, read within a bound.

A path given as an input (a log, a config, a plan, a calibration) could name a FIFO that
blocks ``open()`` until a writer comes, or ``/dev/zero``, which never ends; a symlink can
hide either. :func:`open_regular` opens without blocking (``O_NONBLOCK``, which a regular
file ignores), checks what it opened (``fstat``, so a path swapped after a check is still
caught) and refuses anything but a regular file in one line. :func:`read_bounded` reads
such a file whole only when it is at most ``max_bytes``. Every OS error (a name over 255
bytes, a symlink loop, no permission) is an :class:`InputError` naming the field and path.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

from napkin.errors import InputError

KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
         (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


def _kind(mode: int) -> str:
    return next((said for test, said in KINDS if test(mode)), "something else")


def _os_error(field: str, path: str | os.PathLike, exc: OSError) -> InputError:
    why = {errno.ENOENT: ("does not exist", "give the path of an existing file"),
           errno.ENAMETOOLONG: ("has a name too long for the file system", "give a shorter path"),
           errno.ELOOP: ("is a symlink loop", "point the link at a file"),
           errno.EACCES: ("cannot be read (permission denied)", "give a file you can read"),
           errno.ENOTDIR: ("has a part that is not a folder", "check the path")}
    problem, fix = why.get(exc.errno, (f"cannot be opened ({exc.strerror or exc})", "give the path of a file"))
    return InputError(field, os.fspath(path), problem, fix)


def regular_file(path: str | os.PathLike, field: str) -> Path:
    """``path`` as a Path when it names a regular file (through symlinks); else one clear InputError."""
    try:
        st = os.stat(path)
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        if isinstance(exc, ValueError):
            raise InputError(field, os.fspath(path), "is not a valid path (it holds a NUL byte)") from None
        raise _os_error(field, path, exc) from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(field, os.fspath(path), f"is {_kind(st.st_mode)}, not a regular file",
                         "give the path of a file")
    return Path(path)


def open_regular(path: str | os.PathLike, field: str) -> BinaryIO:
    """``path`` opened for binary reading, refused unless it is a regular file. Never blocks."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except ValueError:
        raise InputError(field, os.fspath(path), "is not a valid path (it holds a NUL byte)") from None
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket, or a FIFO opened for writing only
            raise InputError(field, os.fspath(path), "is not a regular file", "give the path of a file") from None
        raise _os_error(field, path, exc) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise InputError(field, os.fspath(path), f"is {_kind(mode)}, not a regular file",
                             "give the path of a file")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bounded(path: str | os.PathLike, field: str, max_bytes: int) -> bytes:
    """The whole of a regular file of at most ``max_bytes`` (a file that grows past it while read is refused too)."""
    from napkin.units import format as fmt

    with open_regular(path, field) as fh:
        size = os.fstat(fh.fileno()).st_size
        data = fh.read(max_bytes + 1) if size <= max_bytes else b""
    if size > max_bytes or len(data) > max_bytes:
        raise InputError(field, os.fspath(path), f"is larger than napkin reads for a {field} "
                         f"({fmt(float(max(size, len(data))), 'bytes')} > {fmt(float(max_bytes), 'bytes')})",
                         "give the file it should be; a larger one is not one of these")
    return data
