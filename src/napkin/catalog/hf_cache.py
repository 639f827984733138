"""A Hugging Face repo id (``meta-llama/Llama-3.1-70B-Instruct``) read from the local cache, offline.

The cache is the one ``huggingface_hub`` writes (no dependency on it is taken):

    <hub cache>/models--<org>--<name>/refs/main            the commit the main branch points at
    <hub cache>/models--<org>--<name>/snapshots/<commit>/config.json

where <hub cache> is ``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else
``$XDG_CACHE_HOME/huggingface/hub``, else ``~/.cache/huggingface/hub`` (huggingface_hub's
documented order). Nothing is downloaded; a repo id that is not cached is an InputError that
says how to fetch its config.

A repo id is ``org/name`` of letters, digits, ``-``, ``_`` and ``.``, each part starting with a
letter or digit and at most 96 characters (the Hub's own rule), so no name can climb out of
the cache (``..``, absolute paths, separators); the file finally read must resolve inside the
repo's cache folder, so a planted symlink cannot lead elsewhere either.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from napkin.errors import InputError

REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def is_repo_id(text: str) -> bool:
    """True for ``org/name`` in the Hub's alphabet (``..`` anywhere is never one)."""
    return bool(REPO_ID.fullmatch(text)) and ".." not in text


def hub_cache(env: dict[str, str] | None = None) -> Path:
    """The folder huggingface_hub caches models in, from the environment."""
    env = os.environ if env is None else env
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    if env.get("XDG_CACHE_HOME"):
        return Path(env["XDG_CACHE_HOME"]).expanduser() / "huggingface" / "hub"
    return Path("~/.cache/huggingface/hub").expanduser()


def fetch_hint(repo_id: str) -> str:
    return f"fetch it with `huggingface-cli download {repo_id} config.json`, or give a catalog model " \
           "(`napkin catalog models`) or a config.json path"


def cached_config(repo_id: str, field: str = "model", env: dict[str, str] | None = None) -> Path:
    """The cached config.json of ``repo_id`` (main branch, else the only cached snapshot).

    Raises InputError when the id is malformed, when nothing is cached, or when the cached
    file would resolve outside the repo's cache folder.
    """
    if not is_repo_id(repo_id):
        raise InputError(field, repo_id, "is not a Hugging Face repo id of the form org/name",
                         "letters, digits, '-', '_' and '.' only")
    org, name = repo_id.split("/")
    cache = hub_cache(env)
    repo_dir = cache / f"models--{org}--{name}"
    snapshot = _snapshot(repo_dir)
    if snapshot is None:
        raise InputError(field, repo_id, f"is not in the local Hugging Face cache ({cache}) nor a local path",
                         fetch_hint(repo_id))
    config = snapshot / "config.json"
    try:
        resolved = config.resolve(strict=True)
        inside = resolved.is_relative_to(repo_dir.resolve(strict=True))
    except (OSError, RuntimeError):
        raise InputError(field, repo_id, f"has no config.json in its cached snapshot {snapshot.name}",
                         fetch_hint(repo_id)) from None
    if not inside or not resolved.is_file():
        raise InputError(field, repo_id, "has a cached config.json that points outside its cache folder",
                         f"remove {repo_dir} and fetch it again")
    return config  # snapshots/<commit>/config.json: names the revision; it resolves inside repo_dir


def _snapshot(repo_dir: Path) -> Path | None:
    """snapshots/<commit> named by refs/main, else the only snapshot holding a config.json."""
    snapshots = repo_dir / "snapshots"
    if not snapshots.is_dir():
        return None
    ref = repo_dir / "refs" / "main"
    try:
        commit = ref.read_text(encoding="ascii", errors="replace")[:64].strip() if ref.is_file() else ""
    except OSError:
        commit = ""
    if _COMMIT.fullmatch(commit) and (snapshots / commit / "config.json").exists():
        return snapshots / commit
    found = sorted(p for p in snapshots.iterdir() if _COMMIT.fullmatch(p.name) and (p / "config.json").exists())
    if len(found) == 1:
        return found[0]
    if found:  # several revisions and no main ref: the newest download
        return max(found, key=lambda p: (p / "config.json").lstat().st_mtime)
    return None
