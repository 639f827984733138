"""Fuzz of the web API (issue 15): JSON bodies for every ``POST /api/<calculator>``, built from the
request Structs' field metadata, through starlette's in-process TestClient.

Each body starts from the tab's worked example (or from nothing) and changes a few fields to:
valid values (the field's own unit syntax, as ``units.format`` writes it, within its bounds),
boundary values (each bound, just inside and just outside), huge, tiny and negative numbers
(1.7e308, 5e-324, a 400-digit integer, "1e400", "nan"), wrong types (booleans, lists, objects,
nested lists), text with unicode and control characters, server paths and long names, and
NAME=VALUE items naming the request's own fields (serve's ``draft=/etc/hostname``). A case
may also go to ``/view`` (what the page calls), ``/charts`` or ``/cli``, carry ``?cite=1``, or
arrive as a multipart form with random files in the request's file fields.

Every answer is 200 or 4xx, never 5xx; an error is one JSON line whose texts have their control
characters escaped; a 200 holds no ``inf``/``nan``/``Infinity`` the request did not, and no
figure of its report overflowed to infinity (it would read ``null``).

``NAPKIN_FUZZ_CASES`` sets the cases per endpoint (default 50: 1,000 requests over the 20 calculators,
about 20 s on two busy cores); ``make fuzz`` sets 2,000, 40,000 requests. The counts
(status codes per endpoint) are printed at the end of the module when it runs without xdist.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from napkin import calculators, units
from napkin.request import fields
from napkin.web.app import create_app
from napkin.web.examples import EXAMPLES
from napkin.web.names import name_catalog
from tests.fuzz.tally import Tally
from tests.fuzz.values import (ALL_NAMES, EXTREME_NUMBERS, HOSTILE_TEXT, NAMES, PRECISIONS, any_text, numeric,
                               valid_number)
from tests.web.steplog import step_log_csv

CASES = int(os.environ.get("NAPKIN_FUZZ_CASES", "50"))
ALL = list(calculators.CALCULATORS)
COUNTS: dict[str, Counter] = {}
LEDGER_LOG = step_log_csv(120, crash_at=60, lost_steps=10).decode()


@pytest.fixture(scope="module")
def client(request, tmp_path_factory):
    """One in-process app for the module; the ledger's store and caches under a temporary folder."""
    base = tmp_path_factory.mktemp("xdg")
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CACHE_HOME", str(base / "cache"))
    mp.setenv("XDG_DATA_HOME", str(base / "data"))
    yield TestClient(create_app(warm=False), raise_server_exceptions=False)
    mp.undo()
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None and COUNTS:
        total: Counter = Counter()
        for counts in COUNTS.values():
            total.update(counts)
        with capture.global_and_fixture_disabled():
            reporter.write_line("")
            reporter.write_line(f"web fuzz: {sum(total.values()):,} requests over {len(COUNTS)} endpoints; status "
                                + ", ".join(f"{code}: {n:,}" for code, n in sorted(total.items())))
            for name, counts in COUNTS.items():
                reporter.write_line(f"  {name:12s} " + ", ".join(f"{code}: {n:,}" for code, n in sorted(counts.items())))




# ------------------------------------------------------------------------ values, from field metadata
WRONG_TYPES = [None, True, False, [], {}, [1, 2], ["a", ["b"]], {"a": 1}, {"a": {"b": 1}}, [[[]]], [None], [{}]]


def scalar(info: Any, infos: list[Any]) -> st.SearchStrategy:
    """One value of a field, of its kind (mostly valid), or of another kind altogether."""
    kind = info.kind
    if kind in units.KINDS or kind == "int":
        own = numeric(info)
    elif kind == "name":
        own = st.one_of(st.sampled_from(ALL_NAMES), st.sampled_from(ALL_NAMES).map(str.upper), any_text())
    elif kind == "choice":
        choices = info.meta.get("choices") or ["x"]
        own = st.one_of(st.sampled_from(choices), st.sampled_from(choices).map(str.upper), any_text())
    elif kind == "precision":
        own = st.one_of(st.sampled_from(PRECISIONS), any_text())
    elif kind == "bool":
        own = st.sampled_from([True, False, "true", "false", "yes", "no", "1", "0", 1, 0, 2, "maybe", "on", "off"])
    elif kind == "text" and info.container == "list":
        own = st.one_of(pairs(infos), any_text())
    else:
        own = any_text(200)
    return st.one_of(own, own, own, st.sampled_from(WRONG_TYPES), any_text(), st.sampled_from(EXTREME_NUMBERS))


def pairs(infos: list[Any]) -> st.SearchStrategy:
    """NAME=VALUE items naming the request's own fields (serve's waterfall: ``batch=64,draft=...``)."""
    plain = [f for f in infos if not f.container]

    def item(f: Any) -> st.SearchStrategy:
        return scalar(f, []).map(lambda v: f"{f.name.replace('_', '-')}={v}")

    one = st.sampled_from(plain).flatmap(item) if plain else st.just("a=1")
    return st.lists(one, min_size=1, max_size=4).flatmap(lambda xs: st.sampled_from([",".join(xs), xs]))


def value(info: Any, infos: list[Any]) -> st.SearchStrategy:
    """A raw value of a field: of its container (a list, NAME=VALUE pairs) or a scalar."""
    one = scalar(info, infos)
    if info.container == "list":
        return st.one_of(one, st.lists(one, max_size=5),
                         st.lists(one.map(str), min_size=1, max_size=5).map(",".join))
    if info.container == "dict":
        keys = st.one_of(st.sampled_from(NAMES["gpus"] + ["experiments", "lost", "facility", "step", "tokens"]),
                         any_text(12))
        return st.one_of(st.dictionaries(keys, one, max_size=4),
                         st.dictionaries(keys, one.map(str), min_size=1, max_size=4).map(
                             lambda d: ",".join(f"{k}={v}" for k, v in d.items())), one)
    return one


def valid_value(info: Any, infos: list[Any]) -> st.SearchStrategy:
    """A value the field accepts on the web (its kind, its bounds, its catalog), to reach deep into a calculation."""
    kind = info.kind
    if kind in units.KINDS or kind == "int":
        one = valid_number(info)
    elif kind == "name":
        one = st.sampled_from(NAMES[name_catalog(info)])
    elif kind == "choice":
        one = st.sampled_from(info.meta.get("choices") or ["x"])
    elif kind == "precision":
        one = st.sampled_from(PRECISIONS[:8])
    elif kind == "bool":
        one = st.booleans()
    elif kind == "text" and info.container == "list":
        knobs = [f for f in infos if not f.container and f.kind not in ("path", "text", "bool")]
        item = st.sampled_from(knobs).flatmap(
            lambda f: valid_value(f, []).map(lambda v: f"{f.name.replace('_', '-')}={v}")) if knobs else st.just("a")
        return st.lists(item, min_size=1, max_size=3).map(",".join)
    else:
        one = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=60)
    if info.container == "list":
        return st.lists(one, min_size=1, max_size=3).flatmap(
            lambda xs: st.sampled_from([xs, ",".join(str(x) for x in xs)]))
    if info.container == "dict":
        keys = st.sampled_from(NAMES["gpus"][:4] + ["experiments", "lost", "facility", "network"])
        return st.dictionaries(keys, one, min_size=1, max_size=3)
    return one


def key_of(info: Any) -> st.SearchStrategy:
    spellings = [info.name, info.name.replace("_", "-"), *info.meta.get("aliases", [])]
    return st.sampled_from(spellings)


def base_request(name: str) -> dict[str, Any]:
    if name == "ledger":
        return {"price": "$2.50/h", "content": LEDGER_LOG, "filename": "run.csv"}
    return dict(EXAMPLES.get(name, {}))


@st.composite
def bodies(draw: Any, name: str) -> tuple[str, dict[str, Any], dict | None]:
    """(path suffix, JSON body or form fields, files or None) of one request.

    Half the cases change the worked example with values each field accepts (reaching deep into the
    calculation); the others mix in anything (boundaries, extremes, wrong types, hostile text).
    """
    infos = [f for f in fields(calculators.get(name).request) if not f.meta.get("cli_only")]
    typed = [f for f in infos if f.kind != "path" and not f.meta.get("hidden")]
    valid = draw(st.booleans())
    body = base_request(name) if valid or name == "ledger" or draw(st.booleans()) else {}
    for _ in range(draw(st.integers(min_value=0 if not valid else 1, max_value=3))):
        info = draw(st.sampled_from(typed if valid else infos))
        if valid:
            body[info.name] = draw(valid_value(info, infos))
        else:
            body[draw(key_of(info))] = draw(value(info, infos))
    if not valid and draw(st.integers(min_value=0, max_value=9)) == 0:
        body[draw(any_text(20))] = draw(st.sampled_from(EXTREME_NUMBERS + HOSTILE_TEXT[:5]))
    if not valid and body and draw(st.integers(min_value=0, max_value=4)) == 0:
        body.pop(draw(st.sampled_from(sorted(body))))
    suffix = draw(st.sampled_from(["", "", "", "", "", "", "/view", "/view", "?cite=1", "/charts", "/cli"]))
    files = None
    uploads = [f for f in infos if f.kind == "path"]
    if uploads and not valid and draw(st.integers(min_value=0, max_value=3)) == 0:
        info = draw(st.sampled_from(uploads))
        data = draw(st.one_of(st.binary(max_size=200), st.sampled_from(
            [LEDGER_LOG.encode(), b"a = [[[[[[1]]]]]]", b"\xff\xfe\x00", b"device = 'x'\n", b"[" * 5000,
             b'device = "x"\ndate = "2024-01-01"\nmemory_bytes_per_s = 1e400\n', b""])))
        filename = draw(st.one_of(st.sampled_from(["run.csv", "cal.toml", "plan.toml", "q.txt", "x.parquet"]),
                                  any_text(20)))
        files = {info.name: (filename or "f", data, "application/octet-stream")}
        body = {k: _form(v) for k, v in body.items() if k not in ("content", "filename")}
    return suffix, body, files


def _form(v: Any) -> str:
    """A form field's text (a multipart form carries strings)."""
    if isinstance(v, (list, dict)):
        return json.dumps(v)
    return "" if v is None else str(v)


# ------------------------------------------------------------------------ the properties
# a figure gone non-finite, as Python or JavaScript writes it (AMD's link is called Infinity Fabric)
FIGURE_WORDS = re.compile(r"(?<![A-Za-z])(inf|nan|infinity)(?![A-Za-z])(?! Fabric)", re.IGNORECASE)
BAD_CHARS = ("Cc", "Zl", "Zp")


# prose about formulas and defaults (a cited docstring says when a function returns infinity): not figures
PROSE = frozenset({"citations", "cites", "source", "replaced_by"})


def _strings(v: Any, *, skip: frozenset = frozenset()) -> list[str]:
    """Every string in a JSON value, keys included; subtrees under a key in ``skip`` left out."""
    if isinstance(v, str):
        return [v]
    if isinstance(v, dict):
        return [s for k, x in v.items() if k not in skip for s in [str(k), *_strings(x, skip=skip)]]
    if isinstance(v, list):
        return [s for x in v for s in _strings(x, skip=skip)]
    return []


def check_answer(tally: Tally, sent: Any, r: Any, non_finite: list[float]) -> None:
    COUNTS.setdefault(tally.target, Counter())[r.status_code] += 1
    tally.case(r.status_code)
    if not tally.check(r.status_code < 500, "5xx", f"{r.status_code}: {r.text[:500]}"):
        return
    tally.check(r.status_code in (200, 404, 413, 422), "unexpected status", f"{r.status_code}: {r.text[:500]}")
    bare: list[str] = []
    body = json.loads(r.text, parse_constant=bare.append)
    tally.check(not bare, "non-finite figure", f"bare {bare[:3]} in the JSON: {r.text[:300]}")
    if r.status_code != 200:
        tally.check("\n" not in r.text.strip(), "multi-line error", r.text[:500])
        tally.check(isinstance(body, dict) and body.get("message"), "multi-line error", f"no message: {r.text[:500]}")
        for text in _strings(body):
            bad = [c for c in text if unicodedata.category(c) in BAD_CHARS]
            tally.check(not bad, "unescaped control character", f"unescaped {bad!r} in {text!r}")
        return
    said = json.dumps(sent, default=str).lower() if sent is not None else ""
    for text in _strings(body, skip=PROSE):
        for m in FIGURE_WORDS.finditer(text):
            tally.check(m.group().lower() in said, "non-finite figure", f"{m.group()!r} in a 200 answer: {text[:300]!r}")
    tally.check(not non_finite, "non-finite figure", f"the report held {non_finite[:3]} (shown as null)")


def make_test(name: str, tally: Tally):
    @settings(max_examples=CASES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])
    @given(case=bodies(name))
    def run(client: TestClient, non_finite: list[float], case: tuple[str, dict, dict | None]) -> None:
        suffix, body, files = case
        non_finite.clear()
        if files:
            r = client.post(f"/api/{name}{suffix}", data=body, files=files)
        else:
            r = client.post(f"/api/{name}{suffix}", json=body)
        check_answer(tally, {"body": body, "files": [f[0] for f in (files or {}).values()]}, r, non_finite)

    return run


@pytest.mark.parametrize("name", ALL)
def test_web_api_answers_200_or_4xx_with_clean_errors(client, non_finite, name):
    tally = Tally("web", name)
    make_test(name, tally)(client, non_finite)
    tally.close()
