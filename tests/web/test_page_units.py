"""The page's tables print each figure in its unit, as the terminal does (issue 16), and the ledger tab's
sample is the one the docs walk through."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from napkin.cli import cli
from napkin.web import views
from napkin.web.app import STATIC, create_app
from napkin.web.examples import EXAMPLES, SAMPLES

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("key", "kind"), [
    ("kv_bytes_per_sequence", "bytes"),      # was "/s": "_per_s" matched inside "_per_sequence"
    ("batch_s_per_step", "seconds"),         # was "/s": "_per_s" matched inside "_per_step"
    ("batch_memory_s_per_step", "seconds"),
    ("decode_s_per_token", "seconds"),       # X per one thing is in X's unit
    ("flops_per_token", "flops"),
    ("bytes_per_param", None),               # a ratio: a plain number, as the CLI prints it
    ("tokens_per_s_per_user", "per_s"),      # a rate with a qualifier after it
    ("usd_per_million_output_tokens", "usd_per_million"),
    ("usd_per_million_tokens_all_in", "usd_per_million"),  # the qualifier after the words of the unit
    ("hfu", "fraction"), ("share", "fraction"),  # review: plan train's HFU read 0.5391 beside MFU 53.9%
    ("bytes", "bytes"), ("seconds", "seconds"),  # an operator row's columns (3.217e9 where the CLI says 3.217 GB)
    ("fleet_usd_per_hour", "usd_per_hour"),
    ("ttft_s", "seconds"),
])
def test_a_cell_takes_its_unit_from_the_words_of_its_key(key, kind):
    assert views.cell_kind(key) == kind


def test_a_rungs_figures_are_formatted_by_the_units_the_rung_states():
    rung = {"n": 2, "figures": {"memory_bytes_per_gpu": 80e9, "kv_bytes_per_sequence": 670924800.0, "fits": True},
            "units": {"memory_bytes_per_gpu": "bytes", "kv_bytes_per_sequence": "bytes", "fits": None},
            "working": {"kv_bytes_per_sequence": "kv_bytes_per_token · (prompt + output)"}, "derivation": [{}]}

    class Report:
        results = {"rungs": [rung]}

    table = views.tables(Report())["rungs"]
    assert table["columns"] == ["n", "figures"]
    assert table["rows"] == [["2", "memory_bytes_per_gpu: 80 GB\n"
                              "kv_bytes_per_sequence: 670.9 MB  = kv_bytes_per_token · (prompt + output)\n"
                              "fits: yes"]]


def test_every_figure_of_the_journeys_rungs_reads_as_the_terminal_prints_it():
    """Each `figure: value  = working` line of the page's rung table is the line `napkin journey` prints."""
    page = views.view("journey", {})["tables"]["rungs"]
    cells = [dict(zip(page["columns"], row)) for row in page["rows"]]
    printed = CliRunner().invoke(cli, ["journey"]).stdout
    terminal = {" ".join(line.split()) for line in printed.splitlines()}
    lines = [line for cell in cells for line in cell["figures"].splitlines()]
    assert len(lines) > 80
    for line in lines:
        key, rest = line.split(": ", 1)
        if key == "prompt":  # printed once, above the rungs
            continue
        assert " ".join(f"{key} {rest}".split()) in terminal, line


def test_the_ledger_tabs_samples_are_the_docs_sample_log_and_plan():
    for names in SAMPLES["ledger"]["files"].values():
        for name in names:
            assert (STATIC / "examples" / name).read_bytes() == (ROOT / "examples" / "logs" / name).read_bytes()


def test_the_ledger_tab_describes_its_sample_and_reads_it_as_the_docs_do():
    client = TestClient(create_app(warm=False))
    d = client.get("/api/ledger").json()
    assert d["needs_file"] == "logs"
    assert d["example_files"] == {
        "logs": [{"url": "/static/examples/sample-run.csv", "name": "sample-run.csv", "type": "text/csv"}],
        "plan": [{"url": "/static/examples/plan.toml", "name": "plan.toml", "type": "application/toml"}]}
    files = [(field, (f["name"], client.get(f["url"]).content, f["type"]))
             for field, listed in d["example_files"].items() for f in listed]
    r = client.post("/api/ledger/view", data=EXAMPLES["ledger"], files=files)
    assert r.status_code == 200
    rows = dict(r.json()["rows"])
    # the walk-through in the docs (ledger page): `napkin ledger report sample-run.csv --plan plan.toml ...`
    assert rows["usd_per_million_advanced_tokens"] == "$0.08351/M"
    assert rows["realised_usd"] == "$11,507"
    assert r.json()["cli"] == "napkin ledger report sample-run.csv --plan plan.toml --model llama-2-7b --gpu h100"
