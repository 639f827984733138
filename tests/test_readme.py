"""The documentation's sample outputs are real: every `$ napkin ...` command in README.md and in every
page of the documentation site (docs/*.md, in the order of mkdocs.yml's nav) prints exactly that.

Skipped by design (not by environment): `napkin web` (a server), `napkin measure` and
commands reading its calibration file (machine-dependent measurements), `ledger watch`
(follows a file forever) and `ledger runs` (depends on the reader's own store).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def doc_pages() -> list[Path]:
    """The site's pages in the order of its nav (the formula reference is generated: no commands)."""
    import yaml

    def walk(entries: list) -> list[str]:
        out = []
        for entry in entries:
            value = entry if isinstance(entry, str) else next(iter(entry.values()))
            out += walk(value) if isinstance(value, list) else [value]
        return out

    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    return [ROOT / "docs" / page for page in walk(nav)]


# README.md is generated from docs/index.md (tests/test_docs.py checks it is current): the pages cover it
PAGES = doc_pages()


def readme_commands(path: Path = ROOT / "README.md") -> list[tuple[str, str]]:
    blocks: list[list[str]] = []
    cur: list[str] | None = None
    for line in path.read_text().split("\n"):
        if line.startswith("```"):
            if cur is None:
                cur = []
            else:
                blocks.append(cur)
                cur = None
        elif cur is not None:
            cur.append(line)
    out = []
    for block in blocks:
        i = 0
        while i < len(block):
            if not block[i].startswith("$ "):
                i += 1
                continue
            cmd = block[i][2:]
            i += 1
            while cmd.endswith("\\"):
                cmd = cmd[:-1] + " " + block[i].strip()
                i += 1
            lines = []
            while i < len(block) and not block[i].startswith("$ "):
                lines.append(block[i])
                i += 1
            out.append((cmd, "\n".join(lines).strip()))
    return out


def _checked(cmd: str) -> bool:
    words = cmd.replace("&&", " ").split()
    if "napkin" not in words:
        return False
    sub = words[words.index("napkin") + 1]
    return not (sub in ("web", "measure") or "watch" in words or "runs" in words or "--calibration" in words)


CASES = [c for page in PAGES for c in readme_commands(page) if _checked(c[0])]


def test_the_pages_have_commands():
    assert len(PAGES) >= 12 and all(p.exists() for p in PAGES)
    assert len(CASES) >= 40
    assert len([c for c in readme_commands(ROOT / "docs" / "index.md") if _checked(c[0])]) == 5  # five questions


def test_readme_outputs_are_real(tmp_path):
    """Run in the nav's order in one folder (a later command may read a plan an earlier one saved)."""
    for name in ("tests", "src"):
        (tmp_path / name).symlink_to(ROOT / name)
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", XDG_DATA_HOME=str(tmp_path / "data"),
               COLUMNS="200")
    wrong = []
    for cmd, expected in CASES:
        in_logs = "sample-run.csv" in cmd and not cmd.startswith("cd ")  # a page that cd's says so itself
        cwd = tmp_path / "examples" / "logs" if in_logs else tmp_path
        r = subprocess.run(cmd, shell=True, capture_output=True, text=True, cwd=cwd, env=env, timeout=120)
        got = (r.stdout + r.stderr).strip()
        if got != expected:
            wrong.append(f"$ {cmd}\n--- README\n{expected}\n--- now\n{got}")
    assert not wrong, f"{len(wrong)} documented outputs are stale:\n\n" + "\n\n".join(wrong)


def test_readme_python_examples_run_as_shown():
    """Every `>>>` example in the pages prints what the page shows (doctest, ... allowed)."""
    import doctest

    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    found = 0
    for page in [ROOT / "README.md", *PAGES]:
        text = page.read_text()
        blocks = [b.split("```", 1)[0] for b in text.split("```python")[1:]]
        for i, block in enumerate(blocks):
            found += 1
            runner.run(parser.get_doctest(block, {}, f"{page.name} python block {i + 1}", str(page), 0))
    assert found, "the pages have a Python example"
    assert runner.summarize(verbose=False).failed == 0
