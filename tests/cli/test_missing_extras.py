"""Without an optional extra, a command that needs it says which one to install, in one line
(found in review: --chart without the charts extra, and --prometheus without prometheus-client,
printed "internal error")."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

SAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "logs" / "sample-run.csv")


@pytest.fixture
def without(monkeypatch):
    def hide(*modules: str) -> None:
        for name in modules:
            monkeypatch.setitem(sys.modules, name, None)  # `import name` now raises ImportError
    return hide


@pytest.mark.parametrize("args", [
    ("train", "--params", "7B", "--tokens", "2T", "--price", "2.5", "--chart", "{tmp}/t.svg"),
    ("compare", "--gpu", "h100,b200", "--params", "7B", "--tokens", "2T", "--chart", "{tmp}/c.svg"),
    ("serve", "--model", "llama-3.1-8b", "--gpu", "h100", "--chart", "{tmp}/s.svg"),
    ("goodput", "--gpus", "16384", "--mtbf-per-gpu", "50000h", "--checkpoint-time", "60s", "--restart-time",
     "10min", "--chart", "{tmp}/g.svg"),
    ("ledger", "report", SAMPLE, "--price", "2.5/h", "--no-store", "--chart", "{tmp}/l.svg"),
    ("journey", "--chart", "{tmp}/j.svg"),
])
def test_chart_without_the_charts_extra(run_cli, without, tmp_path, args):
    without("vl_convert")
    path = f"{tmp_path}/" + args[-1].split("/")[-1]
    r = run_cli(*[a.format(tmp=tmp_path) for a in args], code=1)
    assert r.stderr.endswith(f"got {path} (pip install 'llm-napkin[charts]')\n")
    assert r.stderr.count("\n") == 1 and "internal error" not in r.stderr


def test_prometheus_without_its_extra(run_cli, without):
    without("prometheus_client", "prometheus_client.core")
    r = run_cli("ledger", "watch", SAMPLE, "--price", "2.5/h", "--prometheus", "127.0.0.1:0",
                "--refreshes", "1", code=1)
    assert r.stderr == ("error: prometheus needs prometheus-client; got 127.0.0.1:0 "
                        "(pip install 'llm-napkin[prometheus]')\n")
