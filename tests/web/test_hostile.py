"""Hostile and careless input on the web API (issue 15): each repro of the issue is an input here.

* item 1: no name or path typed on the web reaches the server's file system: a model-valued
  field takes catalog names or an uploaded config.json, a path field uploads, and a free-text
  list (serve's waterfall) is held to the same rule item by item;
* item 2: what a user typed comes back in an error with its control characters escaped;
* item 11: the inputs that were 500s are 422s naming the field.
"""

from __future__ import annotations

import builtins
import json
import os
import unicodedata

import pytest
from starlette.testclient import TestClient

from napkin import calculators, catalog
from napkin.errors import UnknownName
from napkin.request import fields
from napkin.web.app import create_app
from napkin import limits
from napkin.web.examples import EXAMPLES
from napkin.web.names import model_fields, name_catalog
from tests.web.steplog import step_log_csv

ALL = list(calculators.CALCULATORS)
SENTINEL = "napkin-sentinel"
LEDGER = {"price": "$2.50/h", "content": step_log_csv(200).decode(), "filename": "run.csv"}


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(warm=False), raise_server_exceptions=False)


def base(name: str) -> dict:
    """A valid request of the calculator: its tab's worked example (the ledger: a log's text)."""
    return dict(LEDGER) if name == "ledger" else dict(EXAMPLES.get(name, {}))


@pytest.fixture
def fs_calls(monkeypatch):
    """``fs_calls(marker)``: the list of file-system calls made from now on with a path holding ``marker``."""
    calls: list[tuple[str, str]] = []
    watched = {"marker": SENTINEL}

    def spy(what, real):
        def call(path, *args, **kwargs):
            if isinstance(path, (str, bytes, os.PathLike)) and watched["marker"] in os.fsdecode(path):
                calls.append((what, os.fsdecode(path)))
            return real(path, *args, **kwargs)
        return call

    for name in ("stat", "lstat", "open", "listdir", "scandir", "access"):
        monkeypatch.setattr(os, name, spy(f"os.{name}", getattr(os, name)))
    monkeypatch.setattr(builtins, "open", spy("open", builtins.open))

    def watch(marker: str) -> list[tuple[str, str]]:
        watched["marker"] = marker
        calls.clear()
        return calls

    return watch


def one_line_quoted(body: dict) -> None:
    """Every text of an error body on one line, its control characters escaped (issue 15 item 2)."""
    for key, value in body.items():
        if isinstance(value, str):
            bad = [c for c in value if unicodedata.category(c) in ("Cc", "Zl", "Zp")]
            assert not bad, f"{key} holds {bad!r}: {value!r}"


# ------------------------------------------------------------------ item 1: no server file is read
def test_a_waterfall_step_naming_a_server_file_is_refused_unread(client, fs_calls):
    """The issue's repro: `draft=/etc/hostname` in serve's waterfall reached the model loader, which opened it."""
    calls = fs_calls("/etc/hostname")
    r = client.post("/api/serve", json={"model": "llama-3.1-8b", "gpu": "h100-sxm", "batch": 8, "price": 2.5,
                                        "waterfall": "draft=/etc/hostname"})
    assert r.status_code == 422
    body = r.json()
    assert body["field"] == "waterfall" and body["value"] == "draft=/etc/hostname"
    assert body["problem"] == "has a step whose draft must be a catalog name on the web page"
    assert "accepts catalog names or uploaded files only, never a path on the server" in body["message"]
    assert calls == []


@pytest.mark.parametrize("name,body", [
    ("serve", {"model": "m" * 300, "gpu": "h100-sxm"}),
    ("serve", {"model": "llama-3.1-8b", "gpu": "g" * 300}),
    ("serve", {"model": "llama-3.1-8b", "gpu": "h100-sxm", "waterfall": "draft=" + "d" * 300}),
    ("serve", {"model": "llama-3.1-8b", "gpu": "h100-sxm", "waterfall": "gpu=" + "g" * 300}),
    ("compare", {"params": "7B", "tokens": "2T", "gpu": "h100-sxm," + "g" * 300}),
    ("bill", {"model": "claude-sonnet-4", "input": "1000", "output": "300", "serve_model": "s" * 300}),
])
def test_a_300_character_name_is_422_not_500(client, name, body):
    """Found by the issue's fuzz: a name of 300 characters was a 500 (the file system's ENAMETOOLONG)."""
    r = client.post(f"/api/{name}", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["field"] in body


def typed_inputs(name: str) -> list[tuple[str, str, object]]:
    """(field, what it holds, the value) for every name and path field of a calculator, and every
    NAME=VALUE item of its free-text lists that names one: each value a path or a bare name."""
    infos = [f for f in fields(calculators.get(name).request) if not f.meta.get("cli_only")]
    targets = [f for f in infos if f.kind in ("name", "path")]
    values = [SENTINEL, f"/tmp/{SENTINEL}/config.json", f"{SENTINEL}.json", f"~/{SENTINEL}", f"./{SENTINEL}",
              f"../{SENTINEL}", f"{SENTINEL}/org-model"]
    out = [(f.name, f.name, v) for f in targets for v in values]
    for f in infos:
        if f.kind == "text" and f.container == "list":
            out += [(f.name, g.name, f"{g.name}={v}") for g in targets for v in values]
    return out


@pytest.mark.parametrize("name", ALL)
def test_no_name_or_path_typed_on_the_web_reaches_the_file_system(client, fs_calls, name):
    """Every name and path field (and every waterfall-like item naming one) is refused before anything
    looks it up on disk: the web's own check used to call os.path.exists on the name, and the model
    loader stats a name to see whether it is a folder."""
    calls = fs_calls(SENTINEL)
    models = model_fields(calculators.get(name).request)
    paths = [f.name for f in fields(calculators.get(name).request) if f.kind == "path"]
    for field, target, value in typed_inputs(name):
        r = client.post(f"/api/{name}", json=dict(base(name), **{field: value}))
        assert calls == [], (field, value, calls)
        if target in models or target in paths or "/" in value or ".json" in value:
            assert r.status_code == 422, (field, value, r.text)
            assert r.json()["field"] == field, (field, value, r.text)
            assert "catalog names or uploaded files only" in r.json()["message"], r.text
        else:  # a bare name of a GPU or a price entry: the catalog says whether it knows it
            assert r.status_code in (200, 422), (field, value, r.text)


def test_model_valued_fields_are_every_field_that_reaches_the_model_loader(monkeypatch):
    """The web decides which name fields are models from their docs (napkin.web.names.name_catalog). Every
    field (and free-text item) whose value the calculators hand to catalog.model must be among them, or a
    path typed there would reach the loader's config.json fallback."""
    reached: list[str] = []

    def model(text, field="model"):
        reached.append(str(text))
        raise UnknownName("model", str(text), [], field=field)

    monkeypatch.setattr(catalog, "model", model)
    missed = []
    for name in ALL:
        calc = calculators.get(name)
        models = set(model_fields(calc.request))
        for field, target, value in typed_inputs(name):
            if not str(value).endswith("=" + SENTINEL) and value != SENTINEL:
                continue
            reached.clear()
            try:
                calc(dict(base(name), **{field: value}))
            except Exception:  # noqa: BLE001 (any refusal will do: only what reached the loader counts)
                pass
            if SENTINEL in reached and target not in models:
                missed.append((name, target))
    assert missed == []
    assert model_fields(calculators.get("serve").request) == ["model", "draft"]
    bill = {f.name: name_catalog(f) for f in fields(calculators.get("bill").request) if f.kind == "name"}
    assert bill == {"model": "prices", "serve_model": "models", "gpu": "gpus"}


def test_a_model_may_be_an_uploaded_config_json(client):
    """Catalog names or uploads: an uploaded config.json is read from memory, as on the CLI from a path."""
    config = open("tests/fixtures/hf/llama-3.1-8b/config.json", "rb").read()
    r = client.post("/api/model", files={"model": ("config.json", config, "application/json")})
    assert r.status_code == 200, r.text
    assert r.json()["params"] == client.post("/api/model", json={"model": "llama-3.1-8b"}).json()["params"]
    assert "napkin-upload" not in r.text and "/dev/shm" not in r.text


def test_a_file_in_a_typed_field_is_refused(client):
    r = client.post("/api/serve", data={"model": "llama-3.1-8b"}, files={"gpu": ("h100.txt", b"h100", "text/plain")})
    assert r.status_code == 422 and r.json()["field"] == "gpu"
    r = client.post("/api/journey", files={"prompt": ("q.txt", b"why?", "text/plain")})
    assert r.status_code == 422 and r.json()["field"] == "prompt"


# ------------------------------------------------------------------ item 2: quoted echoes
SPOOF = "\x1b[2J\nerror: spoofed second line\u2028"
CALIBRATION_WITH_A_BAD_KEY = (b'device = "x"\ndate = "2024-01-01"\nmemory_bytes_per_s = 1e12\n'
                              b'[allreduce_bus_bytes_per_s]\n"1MB\\u001b[2J\\nerror: spoofed" = -1\n')


@pytest.mark.parametrize("what,request_args", [
    ("an InputError's value", ("memory", {"json": {"params": "7B" + SPOOF}})),
    ("an unknown field's key", ("memory", {"json": {"params" + SPOOF: "7B"}})),
    ("a model name", ("memory", {"json": {"model": "llama" + SPOOF}})),
    ("a GPU name", ("compare", {"json": {"params": "7B", "tokens": "2T", "gpu": "h100" + SPOOF}})),
    ("a NAME=VALUE key", ("compare", {"json": {"params": "7B", "tokens": "2T", "gpu": "h100-sxm",
                                               "mfu": {"h100" + SPOOF: 0.4}}})),
    ("a waterfall step", ("serve", {"json": {"model": "llama-3.1-8b", "gpu": "h100", "waterfall": "batch=" + SPOOF}})),
    ("a JSON decode error", ("memory", {"content": ('{"params": "7B' + SPOOF).encode(),
                                        "headers": {"content-type": "application/json"}})),
    ("an uploaded file's name", ("serve", {"data": {"model": "llama-3.1-8b"},
                                           "files": {"gpu": ("h100" + SPOOF, b"h100", "text/plain")}})),
    ("a key inside an uploaded calibration", ("train", {"data": {"params": "7B", "tokens": "2T"},
                                                      "files": {"calibration": ("cal.toml", CALIBRATION_WITH_A_BAD_KEY,
                                                                                "text/plain")}})),
    ("a ?cite= value", ("memory", {"json": {"params": "7B"}, "params": {"cite": "yes" + SPOOF}})),
])
def test_user_text_in_an_error_has_its_control_characters_escaped(client, what, request_args):
    name, kwargs = request_args
    r = client.post(f"/api/{name}", **kwargs)
    assert 400 <= r.status_code < 500, r.text
    assert "\n" not in r.text and "\x1b" not in r.text and "\u2028" not in r.text
    body = r.json()
    one_line_quoted(body)


# ------------------------------------------------------------------ item 11: the 500s, each a 422
def test_an_integer_beyond_float_range_is_422(client):
    r = client.post("/api/memory", content=b'{"params": 1' + b"0" * 400 + b"}",
                    headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert r.json()["field"] == "params" and r.json()["problem"] == "is beyond the range of a number"
    assert r.json()["value"] == "an integer of 401 digits"


@pytest.mark.parametrize("body", [{"model": "nope", "gpus": []}, {"model": "nope", "context": []},
                                  {"model": "llama-3.1-8b", "gpu": "nope", "gpus": []}])
def test_an_empty_list_beside_an_unknown_name_is_422(client, body):
    """`[]` was taken for a list of uploads; the error clean-up then wrote UnknownName's read-only fix."""
    r = client.post("/api/memory", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["field"] in ("model", "gpu")


def test_an_empty_list_of_uploads_is_nothing_given(client):
    r = client.post("/api/tokens", json={"text": "hello", "file": []})
    assert r.status_code == 200, r.text


def test_check_with_5e_324_tokens_is_422(client):
    """The issue's repro: 6·N·D/peak underflowed to 0 GPU-hours and the implied price divided by it."""
    r = client.post("/api/check", json={"params": "70B", "tokens": 5e-324, "claimed_usd": "500k"})
    assert r.status_code == 422
    body = r.json()
    assert body["field"] == "tokens" and body["value"] == 5e-324
    assert body["problem"] == "must be at least 1 token"  # napkin.limits: a token count's physical range


@pytest.mark.parametrize("name,body,field", [
    ("card", {"model": "llama-3.1-70b", "gpus": "1.7e308"}, "gpus"),
    ("journey", {"params": "1.7e308"}, "params"),
    ("mfu", {"params": "70B", "tokens_per_step": "4M", "step_time": "2s", "gpus": "8", "peak": "3.8e-294"}, "peak"),
    ("train", {"params": "7B", "tokens": "2.2e-309"}, "tokens"),
])
def test_numbers_beyond_any_physical_input_are_422_on_the_web(client, name, body, field):
    """The issue's CLI repros of item 10, on the web: each overflowed to inf or divided by zero."""
    r = client.post(f"/api/{name}", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["field"] == field
    high = limits.MAX_PARAMS  # the edges of the physical ranges (napkin.limits) are answers
    assert client.post("/api/memory", json={"params": high, "gpus": "1"}).status_code == 200
    assert client.post("/api/memory", json={"params": high * 1.01}).json()["field"] == "params"
    assert client.post("/api/check", json={"params": "70B", "tokens": 1, "claimed_usd": "500k"}).status_code == 200


@pytest.mark.parametrize("body", [b'{"params": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
                                  b"[" * 50_000, b'{"a":' * 10_000 + b"1" + b"}" * 10_000])
def test_deeply_nested_json_is_422(client, body):
    r = client.post("/api/memory", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert r.json()["field"] == "body"


@pytest.mark.parametrize("field,value", [("params", ["7B", ["7B"]]), ("gpu", [["h100"]]), ("overhead", {"a": {"b": 1}}),
                                         ("params", ["7B"]), ("params", {"a": "7B"}), ("gpu", {"a": "h100"})])
def test_a_value_nested_deeper_than_a_field_reads_is_422_naming_it(client, field, value):
    name = "train" if field == "overhead" else "memory"
    r = client.post(f"/api/{name}", json={"params": "7B", "tokens": "2T", field: value} if name == "train"
                    else {field: value, **({"params": "7B"} if field != "params" else {})})
    assert r.status_code == 422, r.text
    assert r.json()["field"] == field


@pytest.mark.parametrize("data,problem", [
    (b"\xff\xfe device = 1", "is not UTF-8 text, so not a TOML file"),
    (b"a = " + b"[" * 100_000 + b"]" * 100_000, "is nested too deeply to be a calibration"),
])
def test_an_uploaded_calibration_that_is_not_utf8_or_nests_deeply_is_422(client, data, problem):
    r = client.post("/api/train", data={"params": "7B", "tokens": "2T"},
                    files={"calibration": ("cal.toml", data, "text/plain")})
    assert r.status_code == 422
    assert r.json()["field"] == "calibration" and r.json()["problem"] == problem
    assert r.json()["value"] == "cal.toml"


def test_error_bodies_are_one_json_line(client):
    r = client.post("/api/memory", json={"params": "7B\n8B"})
    assert r.text.count("\n") == 0 and json.loads(r.text)["message"].count("\n") == 0


# ------------------------------------------------------------------ found by the web fuzz (tests/fuzz)
INF_CALIBRATION = b'device = "x"\ndate = "2024-01-01"\nmemory_bytes_per_s = 1e400\n'


@pytest.mark.parametrize("path,data", [("allreduce", {"size": "141GB", "ranks": "8", "link": "h100-sxm"}),
                                       ("serve/view", {"model": "llama-3.1-70b", "gpu": "h100-sxm"})])
def test_an_error_whose_value_is_infinite_is_still_a_json_422(client, path, data):
    """Found by the fuzz: a calibration's 1e400 reads as inf, and the 422 naming it could not be written
    as JSON (a plain-text 500)."""
    r = client.post(f"/api/{path}", data=data, files={"calibration": ("cal.toml", INF_CALIBRATION, "text/plain")})
    assert r.status_code == 422
    assert r.json() == {"field": "calibration.memory_bytes_per_s", "value": "inf", "problem": "must be a positive number",
                        "fix": "in cal.toml", "message": "calibration.memory_bytes_per_s must be a positive number; "
                                                         "got inf (in cal.toml)"}


def test_a_ratio_with_no_value_reads_as_a_dash_on_the_page(client):
    """Found by the fuzz: an empty file beside a text has no characters per token (0/0, NaN); the page's
    table failed to format it (a 500). It reads "-", as in the CLI's table."""
    r = client.post("/api/tokens/view", data={"text": "Why?"}, files={"file": ("empty.txt", b"", "text/plain")})
    assert r.status_code == 200, r.text
    table = r.json()["tables"]["files"]
    row = dict(zip(table["columns"], table["rows"][1]))
    assert row["name"] == "empty.txt" and row["tokens"] == "0"
    assert row["characters_per_token"] == row["words_per_token"] == "-"


# Left for the owner of plan/ (being moved): found by tests/fuzz's edges; the web's range of numbers
# (1e-30..1e30) lets it through. When it is fixed this test fails (strict): drop the mark.
def test_plan_serve_at_a_vanishing_request_rate_is_not_a_500(client):
    r = client.post("/api/plan-serve", json={"model": "llama-3.1-70b", "rate": 1e-30})
    assert r.status_code in (200, 422), r.text
