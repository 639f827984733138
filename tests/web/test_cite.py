"""The working cites its formula: each step's formula function, trap and source reach the API and the page.

``POST /api/<name>?cite=1`` is byte for byte ``napkin <name> --json --cite`` (every calculator:
tests/web/test_api.py); ``/view`` carries the same citation beside each step of the working,
and each default assumption's source and the measurement that replaces it.
"""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from napkin import calculators, catalog
from napkin.formulas import citation
from napkin.web.app import create_app
from tests.web import cited

WEIGHTS = citation("napkin.formulas.memory.weights_bytes")


@pytest.fixture
def client(monkeypatch):
    monkeypatch.setitem(calculators.CALCULATORS, cited.NAME, f"{cited.__name__}:CITED")
    return TestClient(create_app(warm=False))


def test_the_citation_is_the_formula_functions_docstring():
    assert WEIGHTS == {
        "function": "memory.weights_bytes",
        "equation": "weights_bytes = N · bytes_per_param",
        "trap": '"16 GB" for a 7B model in fp16: 16 is bits per parameter, not gigabytes (14 GB); int4 is half a '
                "byte, never an integer division of bits by 8.",
        "source": WEIGHTS["source"],
    }
    assert WEIGHTS["source"]


def test_post_with_cite_is_the_reports_cited_json(client):
    r = client.post("/api/cited?cite=1", json={"params": "70B"})
    assert r.status_code == 200, r.text
    assert r.text == calculators.get("cited")({"params": "70B"}).to_json(cite=True)
    d = r.json()
    assert d["derivation"][0]["cites"] == WEIGHTS
    assert "cites" not in d["derivation"][1]  # a step no formula function computed cites nothing
    mfu = next(a for a in d["assumptions"] if a["name"] == "mfu")
    assert mfu["source"] == catalog.default("training_mfu").source
    assert mfu["replaced_by"] == catalog.default("training_mfu").replaced_by
    plain = client.post("/api/cited", json={"params": "70B"})
    assert "cites" not in plain.text and plain.text == calculators.get("cited")({"params": "70B"}).to_json()
    assert client.post("/api/cited?cite=0", json={"params": "70B"}).text == plain.text


def test_a_cite_that_is_not_a_yes_or_no_is_422(client):
    r = client.post("/api/cited?cite=maybe", json={})
    assert r.status_code == 422
    assert r.json()["field"] == "cite" and r.json()["value"] == "maybe"


def test_the_view_cites_each_step_beside_its_working(client):
    v = client.post("/api/cited/view", json={"params": "70B"}).json()
    assert len(v["citations"]) == len(v["derivation"]) == 2
    assert v["derivation"][0].startswith("weights_bytes = N · bytes_per_param")
    assert v["citations"] == [WEIGHTS, None]
    mfu = next(a for a in v["assumptions"] if a["name"] == "mfu")
    assert mfu["value"] == "40%" and mfu["basis"] == "assumed"
    assert mfu["source"] == catalog.default("training_mfu").source and mfu["source"].startswith("Dubey et al. 2024")
    assert mfu["replaced_by"] == catalog.default("training_mfu").replaced_by


def test_a_given_input_has_no_default_source(client):
    v = client.post("/api/cited/view", json={"params": "70B", "mfu": "0.5"}).json()
    mfu = next(a for a in v["assumptions"] if a["name"] == "mfu")
    assert mfu["basis"] == "given" and mfu["source"] == "" and mfu["replaced_by"] == ""
