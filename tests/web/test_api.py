"""The web API: every calculator through POST /api/<name>, equal to the CLI's --json.

Each built calculator is run with the worked example its tab opens with (napkin.web.examples)
and with bad input; the worked-example values are checked against the seeds (ids cited).
"""

from __future__ import annotations

import json
import re
import shlex
import sys
import types
from typing import Annotated

import msgspec
import pytest
from starlette.testclient import TestClient

from napkin import calculators, units
from napkin.calculators import Calculator
from napkin.derivation import Report
from napkin.request import field
from napkin.web import calculation, command, guard, uploads, views
from napkin.web.app import create_app
from napkin.web.examples import EXAMPLES
from tests.conftest import approx, worked
from tests.web.steplog import step_log_csv

ALL = list(calculators.CALCULATORS)  # every registered calculator: one that fails to load fails here
# results that measure this run (a planner's configurations per second), not functions of the request
MEASURED = re.compile(r'("configs_per_s": )[-0-9.eE+]+')


def stable(text: str) -> str:
    """The JSON text with its measured rates set to 0: two runs of one request compare equal."""
    return MEASURED.sub(r"\g<1>0", text)


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(warm=False))


# calculators whose tab needs a file: the fields and the upload a test sends
LEDGER_FIELDS = {"price": "$2.50/h", "plan_usd_per_million": "0.1"}
UPLOADS = {"ledger": (LEDGER_FIELDS, {"logs": ("run.csv", step_log_csv(), "text/csv")})}


def request_for(name: str) -> tuple[dict, dict | None]:
    """(raw fields, files) of a valid request: the tab's worked example, or a log for the ledger."""
    return UPLOADS.get(name, (EXAMPLES.get(name, {}), None))


def post(client, name, raw, suffix="", files=None):
    if files:
        return client.post(f"/api/{name}{suffix}", data=raw, files=files)
    return client.post(f"/api/{name}{suffix}", json=raw)


def post_example(client, name, suffix=""):
    raw, files = request_for(name)
    return post(client, name, raw, suffix, files)


def python_report(name: str, *, cite: bool = False) -> str:
    """The same calculation through the Python API (an upload goes in as the log's text)."""
    raw, files = request_for(name)
    if files:
        (filename, data, _), = files.values()
        raw = dict(raw, content=data.decode(), filename=filename)
    return calculators.get(name)(raw).to_json(cite=cite)


# commands without --cite (the owner of each adds it; then its entry goes): `napkin ledger report`
NO_CITE_OPTION = {"ledger"}


# ------------------------------------------------------------------------- GET /api
def test_api_lists_every_built_calculator_with_fields_units_and_bounds(client):
    body = client.get("/api").json()
    names = [c["name"] for c in body["calculators"]]
    assert names == ALL
    memory = next(c for c in body["calculators"] if c["name"] == "memory")
    assert memory["title"] == "Memory"
    assert memory["needs_measuring"].startswith("activation memory")
    assert memory["command"] == "napkin memory"
    ctx = next(f for f in memory["fields"] if f["name"] == "context")
    assert ctx["kind"] == "count" and ctx["unit"] == "count"
    assert ctx["expected"] == units.EXPECTED["count"]
    assert ctx["bounds"] == {"gt": 0}
    usable = next(f for f in memory["fields"] if f["name"] == "usable")
    assert usable["bounds"] == {"gt": 0, "le": 1} and usable["default"] == 0.8
    assert memory["example"] == EXAMPLES["memory"]
    for calc in body["calculators"]:  # every tab says what it establishes and what still needs measuring
        assert calc["establishes"] and calc["needs_measuring"], calc["name"]
    assert "h100-sxm" in body["catalog"]["gpus"] and "llama-3.1-70b" in body["catalog"]["models"]
    assert body["limits"]["json_bytes"] == guard.MAX_JSON_BYTES


def test_api_describes_one_calculator(client):
    r = client.get("/api/roofline")
    assert r.status_code == 200
    assert [f["name"] for f in r.json()["fields"]] == ["gpu", "precision", "intensity", "peak", "bandwidth"]
    # a plain number says what it counts
    assert {f["name"]: f["unit"] for f in r.json()["fields"]}["intensity"] == "FLOP/B"
    units_of = {(c, f["name"]): f["unit"] for c in ("check", "optimal", "amortise", "gpu-hour")
                for f in client.get(f"/api/{c}").json()["fields"]}
    assert units_of[("check", "days")] == units_of[("optimal", "days")] == "d"
    assert units_of[("amortise", "years")] == units_of[("gpu-hour", "years")] == units_of[("optimal", "years")] == "y"
    assert units_of[("optimal", "ratio")] == "tokens/param"


@pytest.mark.parametrize("name", ALL)
def test_every_registered_calculator_answers_its_worked_example(client, name):
    assert name in EXAMPLES, f"add the worked example the {name} tab opens with to napkin.web.examples"
    r = post_example(client, name)
    assert r.status_code == 200, r.text
    assert "derivation" in r.json()


# --------------------------------------------------------- POST /api/<name> == --json
@pytest.mark.parametrize("name", ALL)
def test_post_returns_exactly_what_the_python_report_gives(client, name):
    r = post_example(client, name)
    assert r.headers["content-type"] == "application/json"
    assert stable(r.text) == stable(python_report(name))


@pytest.mark.parametrize("name", ALL)
def test_post_equals_the_cli_json_with_and_without_cite_and_the_copied_command_reproduces_it(client, run_cli, name, tmp_path,
                                                                        monkeypatch):
    raw, files = request_for(name)
    for filename, data, _ in (files or {}).values():
        (tmp_path / filename).write_bytes(data)  # the command names the file as it was uploaded
    monkeypatch.chdir(tmp_path)
    command = post(client, name, raw, "/cli", files).json()["command"]
    words = shlex.split(command)
    assert words[:len(calculation.command_words(name))] == calculation.command_words(name)
    out = stable(run_cli(*words[1:], "--json").stdout)
    assert json.loads(out) == json.loads(stable(post(client, name, raw, "", files).text))
    assert out == stable(post(client, name, raw, "", files).text) + "\n"
    # with each step's formula, trap and source: ?cite=1 is `--json --cite`
    with_cite = stable(post(client, name, raw, "?cite=1", files).text)
    assert with_cite == stable(python_report(name, cite=True))
    if name in NO_CITE_OPTION:  # listed until the command has --cite; this fails once it does
        assert "No such option '--cite'" in run_cli(*words[1:], "--json", "--cite", code=1).stderr
        return
    assert stable(run_cli(*words[1:], "--json", "--cite").stdout) == with_cite + "\n"


def test_cli_command_spells_units_flags_pairs_and_positionals():
    assert command.cli_command("memory", EXAMPLES["memory"]) == (
        "napkin memory --model llama-3.1-70b --context 8192 --sequences 32 --gpu h100-sxm --gpus 4")
    assert command.cli_command("model", {"model": "llama-3.1-8b", "precision": "fp8"}) == (
        "napkin model llama-3.1-8b --precision fp8")
    assert command.cli_command("memory", {"params": "7B", "training": True, "usable": "0.9"}) == (
        "napkin memory --params 7B --training --usable 0.9")
    assert command.cli_command("memory", {"params": "7B", "training": "false"}) == "napkin memory --params 7B"
    assert command.cli_command("allreduce", {"size": "141GB", "ranks": 8, "link_bandwidth": "900GB/s",
                                         "bidirectional": "true"}) == (
        "napkin allreduce --size 141GB --ranks 8 --link-bandwidth 900GB/s --bidirectional")
    assert command.cli_command("train", {"params": "7B", "tokens": "2T", "vary": ["mfu=0.3,0.4", "gpus=8,16"]}) == (
        "napkin train --params 7B --tokens 2T --vary mfu=0.3,0.4 --vary gpus=8,16")  # review: the sweep was dropped
    assert calculation.command_words("plan-serve") == ["napkin", "plan", "serve"]
    assert calculation.command_words("ledger") == ["napkin", "ledger", "report"]


def test_cli_command_quotes_for_the_shell():
    cmd = command.cli_command("mfu", {"params": "70B", "tokens_per_step": "4M", "step_time": "2.07 s", "gpus": 8,
                                  "peak": "$(rm -rf ~)"})
    assert shlex.split(cmd)[-2:] == ["--peak", "$(rm -rf ~)"]
    assert "'$(rm -rf ~)'" in cmd and "'2.07 s'" in cmd


# ------------------------------------------------------------------ worked examples
@pytest.mark.parametrize("ex", worked("kv-total-70b-8k-32seq"), ids=str)
def test_memory_tab_opens_on_70b_32_users_8k_on_4_h100(client, ex):
    d = post(client, "memory", EXAMPLES["memory"]).json()
    assert d["kv_total_bytes"] == approx(ex.expected["kv_total_bytes"], ex.rel_tol)
    assert d["fits"] is True  # the example's note: fits on 4 x H100


@pytest.mark.parametrize("ex", worked("decode-batch1-attainable-h100"), ids=str)
def test_roofline_tab_opens_on_decode_at_batch_1(client, ex):
    d = post(client, "roofline", EXAMPLES["roofline"]).json()
    assert d["attainable_flops_per_s"] == approx(ex.expected["attainable_flops_per_s"], ex.rel_tol)
    assert d["fraction_of_peak"] == approx(ex.expected["fraction_of_peak"], ex.rel_tol)
    assert d["bound"] == "memory"


@pytest.mark.parametrize("ex", worked("mfu-70b-4m-step"), ids=str)
def test_mfu_tab_opens_on_70b_at_2_07_s(client, ex):
    assert post(client, "mfu", EXAMPLES["mfu"]).json()["mfu"] == approx(ex.expected["mfu"], ex.rel_tol)


@pytest.mark.parametrize("ex", worked("allreduce-70b-grads-8-ranks"), ids=str)
def test_allreduce_tab_opens_on_70b_gradients_over_8_ranks(client, ex):
    d = post(client, "allreduce", EXAMPLES["allreduce"]).json()
    assert d["bytes_per_rank"] == approx(ex.expected["bytes_per_rank"], ex.rel_tol)
    assert d["seconds"] == approx(ex.expected["seconds"], ex.rel_tol)


@pytest.mark.parametrize("ex", worked("kv-per-token-llama31-70b"), ids=str)
def test_model_tab_opens_on_llama_70b(client, ex):
    d = post(client, "model", EXAMPLES["model"]).json()
    assert d["kv_bytes_per_token"] == approx(ex.expected["kv_bytes_per_token"], ex.rel_tol)


@pytest.mark.parametrize("ex", worked("cost-7b-2t-marginal", "cost-7b-2t-loaded"), ids=str)
def test_train_tab_opens_on_the_seeds_7b_2t_headline(client, ex):
    d = post(client, "train", EXAMPLES["train"]).json()
    for key, value in ex.expected.items():
        got = {"marginal_usd_per_million_tokens": lambda: d["usd_per_million_tokens"]["marginal"],
               "loaded_usd_per_million_tokens": lambda: d["usd_per_million_tokens"]["loaded"]}.get(key, lambda: d[key])()
        # the seed uses a 989 TFLOP/s peak; the catalog's dense H100 SXM figure is 989.5
        assert got == approx(value, max(ex.rel_tol, 0.002)), key


@pytest.mark.parametrize("ex", worked("hardware-compare-newer-gpu"), ids=str)
def test_compare_tab_opens_on_the_newer_gpu_example(client, ex):
    d = post(client, "compare", EXAMPLES["compare"]).json()
    new = next(row for row in d["ranking"] if row["gpu"] == "next-gen")
    assert new["relative_value"] == approx(ex.expected["candidate_value"], ex.rel_tol)
    assert 1 - new["per_token_vs_baseline"] == approx(ex.expected["candidate_cheaper_per_token_by"], 0.01)


@pytest.mark.parametrize("ex", worked("claim-70b-2t-500k"), ids=str)
def test_check_tab_opens_on_the_500k_claim(client, ex):
    d = post(client, "check", EXAMPLES["check"]).json()
    assert d["train_flops"] == approx(ex.expected["train_flops"], ex.rel_tol)


@pytest.mark.parametrize("ex", worked("journey-tokens-rule"), ids=str)
def test_tokens_tab_opens_on_the_seed_question(client, ex):
    d = post(client, "tokens", EXAMPLES["tokens"]).json()
    assert d["characters"] == ex.inputs["characters"] and d["words"] == ex.inputs["words"]


# ------------------------------------------------------------------------ bad input
def _unit_field(name: str) -> str:
    """The first field of the example that a unit string fills: the one to spoil."""
    from napkin.request import fields

    infos = {f.name: f for f in fields(calculators.get(name).request)}
    for key in request_for(name)[0]:
        if infos[key].kind in units.KINDS or infos[key].kind == "int":
            return key
    for info in infos.values():
        if (info.kind in units.KINDS or info.kind in ("int", "precision", "choice")) and not info.container:
            return info.name
    raise AssertionError(f"{name} has no unit field")


@pytest.mark.parametrize("name", ALL)
def test_bad_value_is_422_naming_the_field_the_value_and_the_fix(client, name):
    field = _unit_field(name)
    raw, files = request_for(name)
    raw = dict(raw, **{field: "banana"})
    r = post(client, name, raw, "", files)
    assert r.status_code == 422
    body = r.json()
    assert body["field"] == field
    assert body["value"] == "banana"
    assert body["message"].startswith(f"{field} ") and "banana" in body["message"]
    assert "Traceback" not in r.text
    assert post(client, name, raw, "/view", files).json() == body


@pytest.mark.parametrize("name", ALL)
def test_unknown_field_is_422_with_the_closest_names(client, name):
    r = post(client, name, {"no_such_field": 1})
    assert r.status_code == 422
    assert r.json()["field"] == "no_such_field"
    assert r.json()["problem"] == "is not a field of this calculator"


def test_a_percentage_for_a_fraction_gets_the_fix(client):
    r = post(client, "memory", {"params": "70B", "usable": "40"})
    assert r.status_code == 422
    assert r.json() == {"field": "usable", "value": "40", "problem": "must be in (0, 1]",
                        "fix": "did you mean 0.40?", "message": "usable must be in (0, 1]; got 40 (did you mean 0.40?)"}


def test_unknown_catalog_name_lists_the_closest(client):
    r = post(client, "memory", {"model": "llama-3.1-70", "gpu": "h100"})
    assert r.status_code == 422
    assert r.json()["field"] == "model" and "llama-3.1-70b" in r.json()["fix"]


def test_unknown_calculator_is_404(client):
    r = client.post("/api/trian", json={})
    assert r.status_code == 404
    assert r.json()["message"].startswith("unknown calculator 'trian'; closest: train")
    assert r.json()["fix"].startswith("did you mean train")
    from napkin.calculators import CALCULATORS

    far = client.post("/api/xyz", json={})
    assert far.status_code == 404 and far.json()["fix"] == "one of " + ", ".join(CALCULATORS)


@pytest.mark.parametrize("body,problem", [(b"{", "is not valid JSON"), (b"[1, 2]", "must be a JSON object"),
                                          (b'"7B"', "must be a JSON object")])
def test_body_that_is_not_a_json_object_is_422(client, body, problem):
    r = client.post("/api/memory", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert r.json()["field"] == "body" and r.json()["problem"] == problem


def test_other_content_types_are_refused(client):
    r = client.post("/api/memory", content=b'{"params": "7B"}', headers={"content-type": "text/plain"})
    assert r.status_code == 422
    assert r.json()["field"] == "content-type"


def test_an_internal_error_is_500_without_a_traceback(client, monkeypatch):
    def boom(name, raw, **options):
        raise RuntimeError("secret detail of the server")

    monkeypatch.setattr(calculation, "run_json", boom)
    r = client.post("/api/memory", json={"params": "7B"})
    assert r.status_code == 500
    assert r.json()["message"] == "internal error: the calculation failed"
    assert "secret" not in r.text and "Traceback" not in r.text


# ------------------------------------------------------------------------- the page
def test_view_carries_the_report_the_working_the_charts_and_the_command(client):
    v = post(client, "memory", EXAMPLES["memory"], "/view").json()
    assert v["report"] == post(client, "memory", EXAMPLES["memory"]).json()
    assert v["title"] == "Memory: Llama 3.1 70B"
    assert ["kv_total_bytes", "85.9 GB"] in v["rows"]
    assert v["derivation"][0].startswith("weights_bytes = N · bytes_per_param")
    assert v["cli"] == command.cli_command("memory", EXAMPLES["memory"])
    assert list(v["charts"]) == ["memory"]
    assert v["chart_error"] is None


def test_view_formats_lists_of_records_as_tables_with_their_units(client):
    v = post_example(client, "plan-serve", "/view").json()
    ranking = v["tables"]["ranking"]
    assert ranking["total"] == len(v["report"]["ranking"]) == 10
    best = dict(zip(ranking["columns"], ranking["rows"][0]))
    raw = v["report"]["ranking"][0]
    assert best["gpu"] == raw["gpu"]
    assert best["usd_per_million_tokens_all_in"] == units.format(raw["usd_per_million_tokens_all_in"], "usd_per_million")
    assert best["ttft_s"] == units.format(raw["ttft_s"], "seconds")
    assert best["tokens_per_s_per_gpu"] == units.format(raw["tokens_per_s_per_gpu"], "per_s")
    points = v["tables"]["pareto_points"]
    assert points["total"] == len(v["report"]["pareto_points"]) > views.TABLE_ROWS == len(points["rows"])
    days = post_example(client, "ledger", "/view").json()["tables"]["per_day"]
    assert [r[0] for r in days["rows"]] == ["2024-05-01", "2024-05-02", "2024-05-03", "2024-05-04"]


def test_page_and_static_files_are_served(client):
    page = client.get("/")
    assert page.status_code == 200 and "<title>napkin" in page.text
    assert '<script src="/static/app.js"' in page.text
    assert client.get("/static/app.js").status_code == 200
    assert client.get("/static/style.css").status_code == 200
    assert client.get("/favicon.ico").headers["content-type"].startswith("image/svg+xml")
    assert client.get("/static/../app.py").status_code == 404


def test_chart_library_is_served_from_the_app_not_the_internet(client):
    r = client.get("/static/vendor/vega.js", headers={"accept-encoding": "gzip"})
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/javascript")
    assert r.headers["content-encoding"] == "gzip"
    assert "window.vegaEmbed=" in r.text and "http://" not in r.text.split("*/", 1)[0]


# ------------------------------------------------------------------------- charts
def test_memory_chart_stacks_weights_kv_and_free_to_the_capacity(client):
    spec = post(client, "memory", EXAMPLES["memory"], "/charts").json()["memory"]
    rows = {r["segment"]: r["bytes"] for r in spec["data"]["values"]}
    d = post(client, "memory", EXAMPLES["memory"]).json()
    assert rows == {"weights": d["weights_bytes"], "KV cache": d["kv_total_bytes"], "free": d["free_bytes"]}
    assert sum(rows.values()) == pytest.approx(d["capacity_bytes"])
    capacity = spec["layer"][1]["data"]["values"][0]["gb"]
    assert capacity == pytest.approx(320.0)  # 4 x 80 GB


def test_memory_chart_when_it_does_not_fit_says_so(client):
    raw = dict(EXAMPLES["memory"], gpus="1")
    spec = post(client, "memory", raw, "/charts").json()["memory"]
    d = post(client, "memory", raw).json()
    assert d["fits"] is False
    assert spec["title"] == f"Memory against capacity: does not fit, short by {d['short_by_bytes'] / 1e9:,.0f} GB"


def test_roofline_chart_marks_the_operating_point_on_the_roof(client):
    spec = post(client, "roofline", EXAMPLES["roofline"], "/charts").json()["roofline"]
    roof = spec["layer"][0]["data"]["values"]
    ridge = 989.5e12 / 3.35e12
    assert [p["intensity"] for p in roof][1] == pytest.approx(ridge)
    assert max(p["tflops"] for p in roof) == pytest.approx(989.5)
    point = spec["layer"][2]["data"]["values"][0]
    assert point["intensity"] == 1 and point["tflops"] == pytest.approx(3.35)  # decode-batch1-attainable-h100


def test_chart_specs_render_with_vl_convert(client):
    import vl_convert as vlc

    for name in ("memory", "roofline"):
        spec = post(client, name, EXAMPLES[name], "/charts").json()[name]
        assert vlc.vegalite_to_svg(spec).startswith("<svg")


# ------------------------------------------------------------------------- safety
SECURITY = {"content-security-policy": guard.CSP, "x-content-type-options": "nosniff", "x-frame-options": "DENY"}


@pytest.mark.parametrize("method,path", [("GET", "/"), ("GET", "/api"), ("GET", "/static/app.js"),
                                         ("POST", "/api/memory"), ("POST", "/api/nope"), ("GET", "/missing")])
def test_every_response_carries_a_restrictive_csp(client, method, path):
    r = client.request(method, path, json={} if method == "POST" else None)
    for k, v in SECURITY.items():
        assert r.headers[k] == v
    assert "script-src 'self';" in guard.CSP and "unsafe-eval" not in guard.CSP


def test_request_body_over_the_limit_is_413(client):
    r = client.post("/api/memory", content=b"{" + b" " * guard.MAX_JSON_BYTES + b"}",
                    headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert r.json()["fix"] == "send at most 1 MiB"


def test_streamed_body_over_the_limit_is_413_even_without_a_length():
    small = TestClient(create_app(warm=False, json_limit=1000))

    def chunks():
        for _ in range(10):
            yield b" " * 500

    r = small.post("/api/memory", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413


def test_upload_over_the_limit_is_413():
    small = TestClient(create_app(warm=False, upload_limit=10_000))
    r = small.post("/api/tokens", files={"file": ("big.txt", b"a" * 20_000, "text/plain")})
    assert r.status_code == 413
    assert r.json()["problem"] == "exceeds the upload limit"


def test_loopback_server_refuses_other_host_names():
    guarded = TestClient(create_app(warm=False, trusted_hosts=guard.LOOPBACK_HOSTS), base_url="http://127.0.0.1:8000")
    assert guarded.get("/api").status_code == 200
    r = guarded.get("/api", headers={"host": "attacker.example:8000"})
    assert r.status_code == 400 and r.json()["field"] == "host"


def test_path_fields_take_uploads_never_server_paths(client):
    r = post(client, "tokens", {"file": "/etc/passwd"})
    assert r.status_code == 422
    assert r.json()["problem"] == "must be an uploaded file on the web page"


@pytest.mark.parametrize("value", ["/etc/passwd", "config.json", "../models", "src"])
def test_name_fields_take_catalog_names_never_server_paths(client, value, monkeypatch, tmp_path):
    (tmp_path / "src").mkdir()
    monkeypatch.chdir(tmp_path)
    r = post(client, "model", {"model": value})
    assert r.status_code == 422
    assert r.json()["problem"] == "must be a catalog name on the web page"


def test_uploads_are_read_in_memory_and_removed(client, monkeypatch, tmp_path):
    made = []
    real = uploads.tempfile.mkdtemp

    def mkdtemp(**kw):
        made.append(real(**kw))
        return made[-1]

    monkeypatch.setattr(uploads.tempfile, "mkdtemp", mkdtemp)
    text = "Why is the sky red at sunset but blue at noon?"
    r = client.post("/api/tokens", files={"file": ("question.txt", text.encode(), "text/plain")})
    assert r.status_code == 200, r.text
    d = r.json()
    assert d["source"] == "question.txt"  # not the private directory it was read from
    assert d["characters"] == 46
    assert made and made[0].startswith("/dev/shm/")  # tmpfs: memory, not disk
    import os

    assert not os.path.exists(made[0])
    (tmp_path / "question.txt").write_text(text)
    monkeypatch.chdir(tmp_path)
    assert client.post("/api/tokens/cli", files={"file": ("question.txt", b"x")}).json()["command"] == (
        "napkin tokens --file question.txt")


class FakePlanRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    gpus: Annotated[int, field("int", "GPUs", gt=0)] = 8
    max_configurations: Annotated[int | None, field("int", "grid cap", gt=0)] = None


def run_fake_plan(req):
    r = Report("plan")
    r.set("max_configurations", req.max_configurations)
    return r


def test_planner_grids_are_capped(monkeypatch, client):
    """A planner whose request has a max_configurations field gets the web's cap, and cannot exceed it."""
    module = types.ModuleType("napkin_web_fake_plan")
    module.PLAN = Calculator("fake-plan", FakePlanRequest, run_fake_plan, "Plan", "a fake planner")
    monkeypatch.setitem(sys.modules, "napkin_web_fake_plan", module)
    monkeypatch.setitem(calculators.CALCULATORS, "fake-plan", "napkin_web_fake_plan:PLAN")
    assert post(client, "fake-plan", {}).json()["max_configurations"] == calculation.WEB_GRID_CAP
    assert post(client, "fake-plan", {"max_configurations": "1000"}).json()["max_configurations"] == 1000
    r = post(client, "fake-plan", {"max_configurations": "1T"})
    assert r.status_code == 422 and r.json()["field"] == "max_configurations"


def test_the_serving_planners_grid_is_capped(client):
    batches = ",".join(str(b) for b in range(1, 2001))
    r = post(client, "plan-serve", {"model": "llama-3.1-70b", "rate": "10/s", "batch": batches, "max_gpus": "64"})
    assert r.status_code == 422
    body = r.json()
    assert body["field"] == "grid" and body["value"] == "392,000 configurations"  # 4 GPUs x 7 x 7 x 2000
    assert body["problem"] == f"exceeds the web page's cap of {calculation.WEB_GRID_CAP:,}"
    assert post(client, "plan-serve", EXAMPLES["plan-serve"]).json()["configurations"] == 1088


def test_a_page_of_another_site_cannot_post(client):
    """Found in review: a form on another origin could POST to the local server (and make it connect to a
    dask scheduler it named). A browser's cross-site POST is refused; same-origin and header-less clients
    (curl) are not."""
    body = {"params": "7B", "tokens": "2T"}
    for headers in ({"origin": "https://evil.example"}, {"sec-fetch-site": "cross-site"},
                    {"sec-fetch-site": "same-site"}, {"origin": "null"}):
        r = client.post("/api/train", json=body, headers=headers)
        assert r.status_code == 403, headers
        assert r.json()["field"] == "origin"
    own = client.post("/api/train", json=body, headers={"origin": "http://testserver", "sec-fetch-site": "same-origin"})
    assert own.status_code == 200
    assert client.post("/api/train", json=body).status_code == 200


@pytest.mark.parametrize("field,value", [("executor", "dask"), ("scheduler", "tcp://127.0.0.1:18786"),
                                         ("workers", "64")])
def test_the_page_cannot_start_processes_or_connect_out(client, field, value):
    body = {"model": "llama-3.1-70b", "rate": "10/s", field: value}
    r = client.post("/api/plan-serve", json=body)
    assert r.status_code == 422
    assert r.json()["field"] == field and r.json()["problem"] == "is not available on the web page"
    names = [f["name"] for f in client.get("/api/plan-serve").json()["fields"]]
    assert field not in names


def test_copied_command_keeps_text_that_starts_with_a_dash(client, run_cli):
    """Found in review: a markdown bullet as `tokens` text was read by the shell command as an option."""
    import shlex

    body = {"text": "- first bullet\n- second bullet", "encoding": "cl100k"}
    command = client.post("/api/tokens/cli", json=body).json()["command"]
    assert command == "napkin tokens --encoding cl100k -- '- first bullet\n- second bullet'"
    words = shlex.split(command)[1:]
    words.insert(words.index("--"), "--json")  # options go before the "--"
    out = run_cli(*words).stdout
    assert json.loads(out) == client.post("/api/tokens", json=body).json()


@pytest.mark.parametrize("name,data,files,field", [
    ("train", {"params": "7B", "tokens": "2T"}, {"calibration": ("cal.toml", b"not = [valid", "text/plain")},
     "calibration"),
    ("ledger", {"price": "2.5/h"}, {"logs": ("run.parquet", b"PAR1 not parquet", "application/octet-stream")},
     "log"),
])
def test_an_error_about_an_upload_names_it_not_the_servers_temp_path(client, name, data, files, field):
    r = client.post(f"/api/{name}", data=data, files=files)
    assert r.status_code == 422
    body = r.json()
    assert body["field"] == field
    assert "napkin-upload" not in r.text and "/dev/shm" not in r.text and "/tmp/" not in r.text
    assert files[field if field in files else next(iter(files))][0] in body["message"]


def test_a_list_of_records_is_a_table_not_a_dump_in_the_figures(client):
    """Found in review: serve's waterfall appeared twice, once as a raw dict dump (with Python's None) in the
    figures; a journey rung's FLOPs read 8.117e14 beside 811.7 TFLOP; realised MFU read 0.02216."""
    body = {"model": "llama-3.1-8b", "gpu": "h100", "waterfall": "batch=64,batch=100000"}
    view = client.post("/api/serve/view", json=body).json()
    assert "waterfall" not in [k for k, _ in view["rows"]] and "waterfall" in view["tables"]
    assert "None" not in json.dumps(view["tables"]["waterfall"])
    rungs = client.post("/api/journey/view", json={}).json()["tables"]["rungs"]
    flops = rungs["columns"].index("flops")
    assert all(row[flops].endswith("FLOP") for row in rungs["rows"])
    assert views.cell_kind("mfu_realised") == views.cell_kind("goodput_time") == "fraction"


# ----------------------------------------------- the serve, journey and bill tabs: the CLI's numbers (issue 13)
SERVING_TABS = [
    ("serve", {"model": "llama-3.1-70b", "gpu": "h100", "gpus": "4", "precision": "fp8", "batch": "64",
               "price": "2.50/h"}),
    ("journey", {"model": "llama-3.1-70b", "gpu": "h100", "gpus": "4", "precision": "bf16", "batch": "32"}),
    ("bill", {"model": "claude-sonnet-4", "reasoning": "700", "self_hosted": True, "serve_model": "llama-3.1-70b",
              "gpu": "h100", "gpus": "4", "precision": "fp8", "price": "2.50/h", "utilization": "0.5",
              "as_of": "2025-10-01"}),
]


@pytest.mark.parametrize(("name", "raw"), SERVING_TABS, ids=[n for n, _ in SERVING_TABS])
def test_serving_tabs_equal_the_cli_through_the_operator_model(client, run_cli, name, raw):
    """What the page posts for these tabs is what the command it shows prints with --json, and its figures are
    the CLI's text, number for number."""
    command = post(client, name, raw, "/cli").json()["command"]
    words = shlex.split(command)
    out = run_cli(*words[1:], "--json").stdout
    assert out == post(client, name, raw).text + "\n"
    view = client.post(f"/api/{name}/view", json=raw).json()
    text = run_cli(*words[1:]).stdout
    headed = JOURNEY_HEADER if name == "journey" else set()  # the journey prints these in its title and Σ line
    checked = 0
    for key, shown in view["rows"]:
        if key not in headed and "\n" not in shown:
            assert re.search(rf"^  {re.escape(key)} +{re.escape(shown)}(  = .*)?$", text, re.M), (key, shown)
            checked += 1
    assert checked > 20


JOURNEY_HEADER = {"model", "gpu", "precision", "kv_precision", "gpus", "prompt", "meter_flops", "flops_convention"}


def test_the_bill_tab_takes_reasoning_tokens_and_shows_the_verdict(client):
    fields = {f["name"]: f for f in client.get("/api/bill").json()["fields"]}
    assert fields["reasoning"]["doc"].startswith("reasoning tokens the model generates before its answer")
    view = client.post("/api/bill/view", json=dict(SERVING_TABS[2][1])).json()
    rows = dict(view["rows"])
    assert rows["output_usd"] == "$0.015" and rows["verdict"] == "above"  # 300 shown + 700 reasoning at $15/M


def test_the_journey_tabs_rungs_read_as_the_cli_prints_them(client, run_cli):
    """Issue 16: the rung table showed `kv_bytes_per_sequence: 670924800/s` and raw `8e10`; each figure now
    reads in the unit its rung names, as in `napkin journey`'s own text."""
    table = client.post("/api/journey/view", json={}).json()["tables"]["rungs"]
    assert "units" not in table["columns"]
    figures = table["columns"].index("figures")
    text = run_cli("journey").stdout
    lines = [line for row in table["rows"] for line in row[figures].split("\n")]
    shown = {line.split("  = ")[0] for line in lines}  # the figure, its working aside
    assert "memory_bytes_per_gpu: 80 GB" in shown and "question_share: 1.2%" in shown
    assert "kv_bytes_per_sequence: 670.9 MB" in shown and "batch_s_per_step: 45.43 ms" in shown
    for line in lines:
        key, value = line.split(": ", 1)
        if key != "prompt":
            assert re.search(rf"^  {re.escape(key)} +{re.escape(value)}(  = .*)?$", text, re.M), line


def test_the_page_cannot_start_a_refit(client):
    """`validate --fit` re-fits leave-sources-out (minutes of CPU): the command line's, not a web request's."""
    r = client.post("/api/validate", json={"group": "serving", "fit": "true"})
    assert r.status_code == 422
    assert r.json()["field"] == "fit" and r.json()["problem"] == "is not available on the web page"
    assert "fit" not in [f["name"] for f in client.get("/api/validate").json()["fields"]]


def test_plan_train_table_formats_the_breakdowns_in_their_units(client):
    """A row's memory breakdown and step parts read as the CLI's --explain prints them (bytes as GB, seconds as s),
    not as raw base-unit floats (review: the page showed 'activations: 1.38e10' and 'compute: 3.5')."""
    raw = {"model": "llama-2-13b", "gpu": "h100", "tokens": "2T", "deadline": "30d", "price": "2.50/h", "top": 1}
    table = post(client, "plan-train", raw, "/view").json()["tables"]["ranked"]
    row = dict(zip(table["columns"], table["rows"][0]))
    best = calculators.get("plan-train")(raw)["ranked"][0]
    assert row["memory_bytes_per_gpu"].splitlines() == [
        f"{k}: {units.format(v, 'bytes')}" for k, v in best["memory_bytes_per_gpu"].items()]
    assert row["step_parts_s"].splitlines()[0] == f"compute: {units.format(best['step_parts_s']['compute'], 'seconds')}"
    assert row["memory_bytes_per_gpu"].splitlines()[-1] == "total: 19.56 GB"  # as the CLI's mem/GPU column


def test_plan_serve_takes_the_host_time_per_request_on_the_web(client):
    """The page's plan serve takes --host-per-request as the command line does: 64 sequences at 1 ms of host time
    each step 64 x 301/300 ms (tests/serve/test_host_bound.py works it by hand), and a p99 objective refuses it in
    one line naming the field."""
    body = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "batch": "64", "prompt": "16", "output": "300",
            "max_gpus": "1", "rate": "10/s", "tpot": "100ms", "host_per_request": "1ms"}
    r = post(client, "plan-serve", body)
    assert r.status_code == 200
    assert r.json()["ranking"][0]["tpot_s"] == pytest.approx(1e-3 * 64 * 301 / 300)
    bad = post(client, "plan-serve", {**body, "tpot_p99": "100ms"})
    assert bad.status_code == 422 and "host_per_request is not simulated under load" in bad.text
