"""tests/golden/worked-examples.json is the shared worked examples (shared/data/worked-examples.json), unchanged.

The suite reads the copy so that a clean clone (CI) has it. The copy's SHA-256 is recorded here:
on every run the copy must match it, so neither can change without the other, and where the
shared file is present (the project's machines, at ../shared or further up) it must match too, so
a change there is noticed. To take a new version of the shared file: copy it over
tests/golden/worked-examples.json and record its hash below, in one commit.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tests.conftest import GOLDEN

# sha256 of shared/data/worked-examples.json as copied (issue 12)
SHARED_SHA256 = "086c6dd067727c92b88315ab1f8f852ad3f31e39e38cd3ef0523fd93372a7cae"
SHARED = Path("shared") / "data" / "worked-examples.json"


def shared_file() -> Path | None:
    """The shared file in the nearest folder above the repository that has one (None on a clean clone)."""
    for folder in GOLDEN.resolve().parents[2].parents:
        if (folder / SHARED).is_file():
            return folder / SHARED
    return None


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_copy_is_the_recorded_shared_file():
    assert sha256(GOLDEN) == SHARED_SHA256, (
        "tests/golden/worked-examples.json differs from the shared file it copies: change the shared file, "
        "copy it over, and record its hash here")
    ids = [e["id"] for e in json.loads(GOLDEN.read_text())["examples"]]
    assert len(ids) == len(set(ids)) and "cost-7b-2t-loaded" in ids


def test_the_shared_file_where_present_is_the_copy():
    shared = shared_file()
    if shared is None:  # a clean clone: the recorded hash above is what the copy is checked against
        return
    assert sha256(shared) == SHARED_SHA256, (
        f"{shared} changed: copy it over tests/golden/worked-examples.json and record its new hash here")
    assert shared.read_bytes() == GOLDEN.read_bytes()
