"""The README's sample outputs are real: every `$ napkin ...` command in it prints exactly that.

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


def readme_commands() -> list[tuple[str, str]]:
    blocks: list[list[str]] = []
    cur: list[str] | None = None
    for line in (ROOT / "README.md").read_text().split("\n"):
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


CASES = [c for c in readme_commands() if _checked(c[0])]


def test_readme_has_commands():
    assert len(CASES) >= 40


def test_readme_outputs_are_real(tmp_path):
    """Run in README order in one folder (a later command may read a plan an earlier one saved)."""
    for name in ("tests", "src"):
        (tmp_path / name).symlink_to(ROOT / name)
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", XDG_DATA_HOME=str(tmp_path / "data"),
               COLUMNS="200")
    wrong = []
    for cmd, expected in CASES:
        cwd = tmp_path / "examples" / "logs" if "sample-run.csv" in cmd else tmp_path
        r = subprocess.run(cmd, shell=True, capture_output=True, text=True, cwd=cwd, env=env, timeout=120)
        got = (r.stdout + r.stderr).strip()
        if got != expected:
            wrong.append(f"$ {cmd}\n--- README\n{expected}\n--- now\n{got}")
    assert not wrong, f"{len(wrong)} README outputs are stale:\n\n" + "\n\n".join(wrong)


def test_readme_python_examples_run_as_shown():
    """Every `>>>` example in the README prints what the README shows (doctest, ... allowed)."""
    import doctest

    text = (ROOT / "README.md").read_text()
    blocks = [b.split("```", 1)[0] for b in text.split("```python")[1:]]
    assert blocks, "the README has a Python example"
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for i, block in enumerate(blocks):
        runner.run(parser.get_doctest(block, {}, f"README python block {i + 1}", "README.md", 0))
    assert runner.summarize(verbose=False).failed == 0
