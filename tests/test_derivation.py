"""Report: results with their working, rendered as text, JSON and HTML."""

from __future__ import annotations

import json

from napkin.derivation import Report


def build() -> Report:
    r = Report("Demo")
    n, d = 7e9, 2e12
    r.step("train_flops", "6 · N · D", value=6 * n * d, unit="flops", N=(n, "count"), D=(d, "count"))
    r.assume("mfu", 0.4, "not measured: run `napkin measure`", unit="fraction")
    r.warn("sparse-peak", "the peak is a sparse figure")
    r.set("usd_per_million_tokens", {"marginal": 0.0819, "loaded": 0.1938})
    r.note("6N convention: no attention term")
    return r


def test_text_table():
    assert build().text() == (
        "Demo\n"
        "  train_flops             8.4e22 FLOP\n"
        "  usd_per_million_tokens  marginal: 0.0819, loaded: 0.1938\n"
        "warning [sparse-peak]: the peak is a sparse figure\n"
        "assumed: mfu = 40%\n"
        "note: 6N convention: no attention term"
    )


def test_json_has_results_in_base_units_and_working():
    d = json.loads(build().to_json())
    assert d["train_flops"] == 8.4e22
    assert d["usd_per_million_tokens"] == {"marginal": 0.0819, "loaded": 0.1938}
    assert d["derivation"] == [{"name": "train_flops", "formula": "6 · N · D", "values": {"N": 7e9, "D": 2e12},
                                "value": 8.4e22, "unit": "flops", "note": ""}]
    assert d["assumptions"] == [{"name": "mfu", "value": 0.4, "unit": "fraction", "basis": "assumed",
                                 "note": "not measured: run `napkin measure`"}]
    assert d["warnings"] == [{"code": "sparse-peak", "message": "the peak is a sparse figure"}]


def test_explain_substitutes_values():
    assert "train_flops = 6 · N · D   [N = 7B, D = 2T]   = 8.4e22 FLOP" in build().explain()


def test_html_escapes():
    r = Report("<script>")
    r.set("x", 1.0)
    assert "<script>" not in r.html() and "&lt;script&gt;" in r.html()


def test_non_finite_values_become_null():
    r = Report("t")
    r.set("x", float("inf"))
    assert json.loads(r.to_json())["x"] is None
