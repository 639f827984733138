"""A Hugging Face repo id resolves from a local cache laid out as huggingface_hub lays it out, offline,
and nothing a user types can make napkin open a file outside that layout.

Every cache here is a fake one built in a temporary folder.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from napkin import catalog
from napkin.catalog import hf_cache
from napkin.errors import InputError, UnknownName

FIXTURES = Path(__file__).parent / "fixtures" / "hf"
COMMIT = "0e9e39f249a16976918f6564b8830bc894c89659"
OLD = "5206a32e0bd3067aef1ce90f5528ade7d866253f"


def make_cache(hub: Path, repo: str, fixture: str, commit: str = COMMIT, ref: bool = True) -> Path:
    """models--org--name/{blobs,refs/main,snapshots/<commit>/config.json -> ../../blobs/<hash>}."""
    org, name = repo.split("/")
    root = hub / f"models--{org}--{name}"
    (root / "blobs").mkdir(parents=True, exist_ok=True)
    blob = root / "blobs" / f"{commit[:12]}cfg"
    shutil.copy(FIXTURES / fixture / "config.json", blob)
    snap = root / "snapshots" / commit
    snap.mkdir(parents=True)
    (snap / "config.json").symlink_to(Path("..") / ".." / "blobs" / blob.name)
    if ref:
        (root / "refs").mkdir(exist_ok=True)
        (root / "refs" / "main").write_text(commit)
    return root


@pytest.fixture
def hub(tmp_path, monkeypatch):
    path = tmp_path / "hub"
    path.mkdir()
    for var in ("HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(path))
    return path


def test_repo_id_resolves_offline(hub):
    make_cache(hub, "meta-llama/Llama-3.1-8B", "llama-3.1-8b")
    m = catalog.model("meta-llama/Llama-3.1-8B")
    assert m.name == "meta-llama/Llama-3.1-8B" and m.params == 8_030_261_248
    assert str(hub) in m.source and COMMIT in m.source


def test_catalog_names_win_over_the_cache(hub):
    assert catalog.model("llama-3.1-8b").key == "llama-3.1-8b"


def test_refs_main_picks_the_revision(hub):
    root = make_cache(hub, "Qwen/Qwen3-8B", "qwen3-8b", commit=COMMIT)
    old = root / "snapshots" / OLD
    old.mkdir()
    shutil.copy(FIXTURES / "llama-3.1-8b" / "config.json", old / "config.json")
    assert catalog.model("Qwen/Qwen3-8B").params == 8_190_735_360  # refs/main, not the other snapshot


def test_single_snapshot_without_ref(hub):
    make_cache(hub, "openai/gpt-oss-20b", "gpt-oss-20b", ref=False)
    assert catalog.model("openai/gpt-oss-20b").params == 20_914_757_184


def test_missing_repo_says_how_to_fetch_in_one_line(hub):
    with pytest.raises(InputError) as e:
        catalog.model("meta-llama/Llama-3.1-70B-Instruct", field="--model")
    msg = str(e.value)
    assert "\n" not in msg and e.value.field == "--model"
    assert "is not in the local Hugging Face cache" in msg and str(hub) in msg
    assert "`huggingface-cli download meta-llama/Llama-3.1-70B-Instruct config.json`" in msg


@pytest.mark.parametrize("env, expected", [
    ({"HF_HUB_CACHE": "/a/hub", "HF_HOME": "/b", "XDG_CACHE_HOME": "/c"}, "/a/hub"),
    ({"HF_HOME": "/b", "XDG_CACHE_HOME": "/c"}, "/b/hub"),
    ({"XDG_CACHE_HOME": "/c"}, "/c/huggingface/hub"),
])
def test_cache_location_follows_huggingface_hub(env, expected):
    assert hf_cache.hub_cache(env) == Path(expected)


def test_default_cache_is_under_home():
    assert hf_cache.hub_cache({}) == Path("~/.cache/huggingface/hub").expanduser()


def test_hf_home_is_honoured(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hfhome"))
    make_cache(tmp_path / "hfhome" / "hub", "google/gemma-3-4b-it", "gemma-3-4b-it")
    assert catalog.model("google/gemma-3-4b-it").checkpoint_params == 4_300_079_472


@pytest.mark.parametrize("name", ["../etc", "org/..", "../../etc/passwd", "org/name/extra", "/etc/passwd",
                                  "org/.hidden", "org/na me", "org/name\n", "org//name", "-org/name",
                                  "org/" + "x" * 97, "org/name;rm", "a..b/c"])
def test_malformed_repo_ids_are_not_repo_ids(name):
    assert not hf_cache.is_repo_id(name)
    with pytest.raises(InputError):
        hf_cache.cached_config(name)


def test_a_symlink_out_of_the_cache_is_refused(hub, tmp_path):
    secret = tmp_path / "outside.json"
    shutil.copy(FIXTURES / "llama-3.1-8b" / "config.json", secret)
    root = hub / "models--evil--repo"
    snap = root / "snapshots" / COMMIT
    snap.mkdir(parents=True)
    (snap / "config.json").symlink_to(secret)
    with pytest.raises(InputError, match="outside its cache folder"):
        catalog.model("evil/repo")


def test_a_ref_naming_a_path_is_ignored(hub):
    root = make_cache(hub, "org/model", "qwen3-8b", ref=False)
    (root / "refs").mkdir()
    (root / "refs" / "main").write_text("../../../../etc")
    assert catalog.model("org/model").params == 8_190_735_360  # falls back to the only snapshot


def test_a_local_folder_wins_over_a_repo_id(hub, tmp_path, monkeypatch):
    """A path the user has on disk is read as a path, even when it looks like org/name."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "org" / "qwen").mkdir(parents=True)
    shutil.copy(FIXTURES / "qwen3-8b" / "config.json", tmp_path / "org" / "qwen" / "config.json")
    make_cache(hub, "org/qwen", "llama-3.1-8b")
    assert catalog.model("org/qwen").params == 8_190_735_360


def test_a_plain_unknown_name_is_still_unknown(hub):
    with pytest.raises(UnknownName):
        catalog.model("llama-9")


def test_snapshot_without_config_is_not_cached(hub):
    root = hub / "models--org--empty" / "snapshots" / COMMIT
    root.mkdir(parents=True)
    with pytest.raises(InputError, match="not in the local Hugging Face cache"):
        catalog.model("org/empty")


def test_nothing_is_fetched(hub, monkeypatch):
    """No network: a socket opened during the look-up fails the test."""
    import socket

    def refuse(*a, **k):
        raise AssertionError("napkin opened a network connection")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    with pytest.raises(InputError):
        catalog.model("meta-llama/Llama-3.1-70B-Instruct")
    assert os.environ["HF_HUB_CACHE"] == str(hub)


def test_a_missing_json_path_is_a_path_error_not_a_cache_miss(hub):
    with pytest.raises(InputError, match="is not a config.json file"):
        catalog.model("configs/my.json")
