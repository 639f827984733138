"""Files a user names: regular files only, opened without blocking, read within a bound.

A path given as an input (a log, a config, a plan, a calibration) could name a FIFO that
blocks ``open()`` until a writer comes, or ``/dev/zero``, which never ends; a symlink can
hide either. :func:`open_regular` opens without blocking (``O_NONBLOCK``, which a regular
file ignores), checks what it opened (``fstat``, so a path swapped after a check is still
caught) and refuses anything but a regular file in one line. :func:`read_bounded` reads
such a file whole only when it is at most ``max_bytes``. Every OS error (a name over 255
bytes, a symlink loop, no permission) is an :class:`InputError` naming the field and path.

:func:`write_file` is the same for an output (``--save``, ``--chart``): it writes a regular file
only (a FIFO would block the write until a reader came; ``/dev/full`` never takes it), in a folder
that exists, and says in one line why it cannot.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

from napkin.errors import InputError

KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
         (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


def _kind(mode: int) -> str:
    return next((said for test, said in KINDS if test(mode)), "something else")


def os_error(field: str, path: str | os.PathLike, exc: OSError) -> InputError:
    why = {errno.ENOENT: ("does not exist", "give the path of an existing file"),
           errno.ENAMETOOLONG: ("has a name too long for the file system", "give a shorter path"),
           errno.ELOOP: ("is a symlink loop", "point the link at a file"),
           errno.EACCES: ("cannot be read (permission denied)", "give a file you can read"),
           errno.ENOTDIR: ("has a part that is not a folder", "check the path"),
           errno.EISDIR: ("is a folder", "give a file name in it"),
           errno.EROFS: ("is on a read-only file system", "give a path you can write"),
           errno.ENOSPC: ("cannot be written: the disk is full", "free some space or give another disk"),
           errno.EDQUOT: ("cannot be written: the disk quota is spent", "free some space or give another disk"),
           errno.EPERM: ("cannot be written (operation not permitted)", "give a path you can write")}
    problem, fix = why.get(exc.errno, (f"cannot be opened ({exc.strerror or exc})", "give the path of a file"))
    return InputError(field, os.fspath(path), problem, fix)


def regular_file(path: str | os.PathLike, field: str) -> Path:
    """``path`` as a Path when it names a regular file (through symlinks); else one clear InputError."""
    try:
        st = os.stat(path)
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        if isinstance(exc, ValueError):
            raise InputError(field, os.fspath(path), "is not a valid path (it holds a NUL byte)") from None
        raise os_error(field, path, exc) from None
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
        raise os_error(field, path, exc) from None
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


def write_file(path: str | os.PathLike, field: str, data: bytes | str, *, append: bool = False) -> None:
    """Write ``data`` (text as UTF-8) to ``path``: a regular file (new, or replaced), in a folder that exists.

    Never blocks: a FIFO, a device or a folder at ``path`` is refused before it is opened, and the open
    does not wait for a reader. Every OS error is one InputError naming the field and the path.
    """
    check_writable(path, field)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
    _write_fd(path, field, data, flags)


def check_writable(path: str | os.PathLike, field: str) -> None:
    """InputError unless ``path`` is a regular file or a new name in a folder that exists (nothing is written):
    a command writing several files checks them all first, so none is written when one would fail."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise InputError(field, os.fspath(path), "is in a folder that does not exist",
                             "create the folder first, or give a path in an existing one") from None
    except ValueError:
        raise InputError(field, os.fspath(path), "is not a valid path (it holds a NUL byte)") from None
    except OSError as exc:
        raise os_error(field, path, exc) from None
    else:
        if not stat.S_ISREG(st.st_mode):
            raise InputError(field, os.fspath(path), f"is {_kind(st.st_mode)}, not a regular file",
                             "give the path of a file to write")


def _write_fd(path: str | os.PathLike, field: str, data: bytes | str, flags: int) -> None:
    try:
        fd = os.open(path, flags | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO put there since the check, with no reader
            raise InputError(field, os.fspath(path), "is not a regular file", "give the path of a file to write") from None
        raise os_error(field, path, exc) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError(field, os.fspath(path), "is not a regular file", "give the path of a file to write")
        with os.fdopen(fd, "wb", closefd=False) as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
    except OSError as exc:
        raise os_error(field, path, exc) from None
    finally:
        os.close(fd)


# A plan file napkin writes holds a few hundred bytes; one of a megabyte is not a plan, and reading it
# whole would be an unbounded read of whatever the path names.
MAX_CONFIG_BYTES = 2**20


def read_toml(path: str, field: str, *, what: str = "a plan file", fix: str | None = None,
              missing_fix: str | None = None, max_bytes: int = MAX_CONFIG_BYTES) -> dict[str, Any]:
    """A small TOML file a user names (a plan, a calibration): a regular file of at most ``max_bytes``,
    UTF-8, valid TOML, nested no deeper than a parser's stack; else one InputError naming ``field``.

    ``what`` names the file in the problem ("is nested too deeply to be a calibration"), ``fix`` is
    said after any problem with its content, ``missing_fix`` after "does not exist".
    """
    import tomllib

    try:
        data = read_bounded(path, field, max_bytes)
    except InputError as exc:
        if exc.problem == "does not exist" and missing_fix:
            raise InputError(field, str(path), "does not exist", missing_fix) from None
        raise
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError(field, str(path), "is not UTF-8 text, so not a TOML file", fix) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(field, str(path), f"is not valid TOML ({exc})", fix) from None
    except RecursionError:
        raise InputError(field, str(path), f"is nested too deeply to be {what}", fix) from None
