"""napkin.files: a path a user names is a regular file, opened without blocking and read within a bound."""

from __future__ import annotations

import os
import threading

import pytest

from napkin.errors import InputError
from napkin.files import open_regular, read_bounded, regular_file


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def test_a_fifo_is_refused_without_blocking(fifo):
    """open() on a FIFO waits for a writer forever; the check opens without blocking and refuses it."""
    done: list[str] = []

    def attempt() -> None:
        with pytest.raises(InputError) as exc:
            open_regular(fifo, "log")
        done.append(str(exc.value))

    t = threading.Thread(target=attempt, daemon=True)
    t.start()
    t.join(10)
    assert done == [f"log is a FIFO, not a regular file; got {fifo} (give the path of a file)"]


@pytest.mark.parametrize("target, kind", [("/dev/zero", "a character device"), (None, "a FIFO")])
def test_a_symlink_to_a_device_or_fifo_is_refused(tmp_path, fifo, target, kind):
    link = tmp_path / "log.csv"
    link.symlink_to(target or fifo)
    for check in (regular_file, open_regular):
        with pytest.raises(InputError, match=f"^log is {kind}, not a regular file; got {link} "):
            check(link, "log")


def test_os_errors_are_one_line_naming_the_path(tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(InputError, match=r"^log is a symlink loop; got .*loop \(point the link at a file\)$"):
        open_regular(loop, "log")
    with pytest.raises(InputError, match=r"^plan has a name too long for the file system; got x{300} "):
        regular_file("x" * 300, "plan")
    with pytest.raises(InputError, match=r"^config does not exist; got .*nope.toml "):
        read_bounded(tmp_path / "nope.toml", "config", 10)
    with pytest.raises(InputError, match=r"^log is a folder, not a regular file"):
        open_regular(tmp_path, "log")
    with pytest.raises(InputError, match="NUL byte"):
        regular_file("a\x00b", "log")


def test_read_bounded_reads_a_small_file_and_refuses_a_large_one(tmp_path):
    small = tmp_path / "plan.toml"
    small.write_bytes(b"x" * 100)
    assert read_bounded(small, "plan", 100) == b"x" * 100
    with pytest.raises(InputError, match=r"^plan is larger than napkin reads for a plan \(101 B > 100 B\); got "):
        small.write_bytes(b"x" * 101)
        read_bounded(small, "plan", 100)
