"""The precompiled catalogs (napkin.catalog.compiled): same content as the TOML, never a failure."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from napkin.catalog import compiled

CATALOG = Path(compiled.__file__).parent
FILES = sorted(CATALOG.glob("*.toml"))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    where = tmp_path / "cache"
    monkeypatch.setenv(compiled.ENV, str(where))
    return where


def test_the_suite_never_writes_the_users_cache():
    assert compiled.cache_dir() == os.environ["NAPKIN_CACHE_DIR"]
    assert "napkin-test-cache-" in compiled.cache_dir()


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_catalog_reads_back_equal_from_its_copy(path, cache):
    expected = tomllib.loads(path.read_text())
    first = compiled.load_toml(path)
    assert first == expected
    copies = list(cache.iterdir())
    assert [c.name.split("-")[0] for c in copies] == [path.stem]  # the shipped catalogs are all cacheable
    second = compiled.load_toml(path)
    assert second == expected
    assert list(second) == list(expected)  # table order kept (the catalog lists print in it)
    assert [type(v) for v in second.values()] == [type(v) for v in expected.values()]


def test_an_edited_toml_is_read_afresh(tmp_path, cache):
    path = tmp_path / "gpus.toml"
    path.write_text('[a]\nmemory_bytes = 80e9\nsource = "x"\n')
    assert compiled.load_toml(path) == {"a": {"memory_bytes": 80e9, "source": "x"}}
    path.write_text('[a]\nmemory_bytes = 96e9\nsource = "x"\n')  # same length, other bytes
    assert compiled.load_toml(path) == {"a": {"memory_bytes": 96e9, "source": "x"}}


def test_ints_and_floats_keep_their_types(tmp_path, cache):
    path = tmp_path / "t.toml"
    path.write_text("a = 1\nb = 1.0\nc = [1, 2.5]\nd = true\n")
    compiled.load_toml(path)
    got = compiled.load_toml(path)
    assert got == {"a": 1, "b": 1.0, "c": [1, 2.5], "d": True}
    assert [type(got["a"]), type(got["b"]), type(got["c"][0])] == [int, float, int]


def test_dates_are_not_cached_but_still_read(tmp_path, cache):
    path = tmp_path / "dated.toml"
    path.write_text("[p]\ndate = 2024-05-01\n")
    first = compiled.load_toml(path)
    assert first == tomllib.loads(path.read_text())
    assert not cache.exists() or not list(cache.iterdir())  # msgpack would give the date back as a string
    assert compiled.load_toml(path) == first


def test_an_unwritable_cache_is_not_an_error(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(compiled.ENV, str(blocker / "cache"))
    path = CATALOG / "gpus.toml"
    assert compiled.load_toml(path) == tomllib.loads(path.read_text())


def test_a_corrupt_copy_is_replaced(cache):
    path = CATALOG / "assumptions.toml"
    compiled.load_toml(path)
    (copy,) = cache.iterdir()
    copy.write_bytes(b"\xc1 not msgpack")
    assert compiled.load_toml(path) == tomllib.loads(path.read_text())
    assert compiled.load_toml(path) == tomllib.loads(path.read_text())
    assert copy.read_bytes() != b"\xc1 not msgpack"


def test_a_copy_of_another_file_is_not_used(tmp_path, cache):
    """Two files of the same name in different folders keep separate copies."""
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    (tmp_path / "x" / "t.toml").write_text("v = 1\n")
    (tmp_path / "y" / "t.toml").write_text("v = 2\n")
    assert compiled.load_toml(tmp_path / "x" / "t.toml") == {"v": 1}
    assert compiled.load_toml(tmp_path / "y" / "t.toml") == {"v": 2}
    assert compiled.load_toml(tmp_path / "x" / "t.toml") == {"v": 1}


def test_without_a_cache_variable_it_uses_the_xdg_cache(monkeypatch, tmp_path):
    monkeypatch.delenv(compiled.ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert compiled.cache_dir() == str(tmp_path / "napkin")
