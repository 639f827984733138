"""The documentation site: README.md is its home page, the site builds offline with --strict, and the
formula reference carries every formula's equation, trap and source from its docstring."""

from __future__ import annotations

import html
import importlib
import inspect
import json
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _docs_module(name: str):
    spec = importlib.util.spec_from_file_location(f"napkin_docs_{name}", ROOT / "docs" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_is_generated_from_the_sites_home_page():
    readme = _docs_module("readme")
    assert (ROOT / "README.md").read_text() == readme.readme((ROOT / "docs" / "index.md").read_text()), \
        "README.md is stale: run `make readme` (edit docs/index.md, not README.md)"


def test_the_readme_links_into_docs_and_every_link_resolves():
    readme = _docs_module("readme")
    assert readme.readme("[a](serve.md#napkin-validate) [b](https://x.org/a.md) [c](#here)") == (
        readme.HEADER + "[a](docs/serve.md#napkin-validate) [b](https://x.org/a.md) [c](#here)")
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) < 200  # one page for a newcomer
    targets = re.findall(r"\]\((docs/[^)#\s]+)", text)
    assert len(targets) >= 12
    assert [t for t in targets if not (ROOT / t).exists()] == []


def _text(page: Path) -> str:
    """A built page's visible text: tags dropped, entities read, whitespace collapsed, code marks dropped."""
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", page.read_text(), flags=re.S)
    body = re.sub(r"</?(code|span|em|strong|a)\b[^>]*>", "", body)  # inside a sentence: no break
    return _norm(html.unescape(re.sub(r"<[^>]+>", " ", body)))


def _norm(text: str) -> str:
    return " ".join(text.replace("`", "").split())


def formula_functions() -> list[str]:
    """Every public module-level function of napkin.formulas, as 'napkin.formulas.module.function'."""
    import napkin.formulas as formulas

    out = []
    for info in pkgutil.iter_modules(formulas.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"napkin.formulas.{info.name}")
        for name, fn in vars(module).items():
            if inspect.isfunction(fn) and not name.startswith("_") and fn.__module__ == module.__name__:
                out.append(f"napkin.formulas.{info.name}.{name}")
    return out


def test_make_test_installs_the_docs_build():
    """`make test` installs the [test] extra, which pulls in [docs] from PyPI: the site's build is part of the
    suite, so a missing MkDocs, Material theme or mkdocstrings handler fails here (never a skip)."""
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(req.startswith("llm-napkin[") and "docs" in req.split("[")[1] for req in extras["test"])
    assert {req.split(">")[0].split("[")[0] for req in extras["docs"]} == {"mkdocs", "mkdocs-material", "mkdocstrings"}
    assert ".[test]" in (ROOT / "Makefile").read_text() and "make test" in (ROOT / ".ci" / "run").read_text()
    for module in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python", "griffe", "yaml"):
        importlib.import_module(module)  # ImportError: run `make test` (or pip install -e '.[docs]')
    assert (BIN / "mkdocs").exists()


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """`mkdocs build --strict` into a temporary folder (never site/ in the checkout)."""
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    r = subprocess.run([str(BIN / "mkdocs"), "build", "--strict", "--site-dir", str(out)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return out


def test_the_site_builds_strict_with_every_page_and_the_house(site):
    pages = {p.relative_to(site).as_posix() for p in site.rglob("*.html")}
    for name in ("index", "start", "basics", "train", "economics", "ledger", "serve", "journey", "web",
                 "measure", "benchmarks", "house", "reference/index"):
        assert f"{name}.html" in pages
    assert "The house: which file holds what" in _text(site / "house.html")
    assert "How far to trust it" in _text(site / "index.html")
    assert json.loads((site / "search" / "search_index.json").read_text())["docs"]


def test_the_site_fetches_nothing_from_the_network(site):
    """Scripts, stylesheets and fonts are the site's own: it reads offline (a link to a web page is fine)."""
    fetched = re.compile(r"<(?:script|img|iframe)\b[^>]*\bsrc=\"(https?:)?//|<link\b[^>]*\bhref=\"(https?:)?//")
    offenders = [p.name for p in site.rglob("*.html") if fetched.search(p.read_text())]
    assert offenders == []


def test_the_formula_reference_gives_each_formulas_equation_trap_and_source(site):
    from napkin.formulas import citation

    functions = formula_functions()
    assert len(functions) > 100
    missing = []
    for path in functions:
        built = site / "reference" / f"{path.split('.')[2]}.html"
        page = _text(built)
        cite = citation(path)
        for part in ("equation", "trap", "source"):
            if cite[part] and _norm(cite[part]) not in page:
                missing.append(f"{path} {part}: {cite[part][:80]}")
        assert f'id="{path}"' in built.read_text(), path  # its own heading, with its signature: a search finds it
    assert missing == []
    overview = _text(site / "reference" / "index.html")
    modules = sorted({f.split(".")[2] for f in functions})
    assert all(f"{m} " in overview for m in modules)  # the overview lists every module


def test_the_accuracy_table_is_napkin_validates():
    """The home page's accuracy table: serving and training median and max errors, out of sample."""
    from click.testing import CliRunner

    from napkin import units
    from napkin.cli import cli

    got = json.loads(CliRunner().invoke(cli, ["validate", "--json"]).stdout)
    keys = {"serving throughput": "serving_throughput", "serving time per output token": "serving_tpot",
            "serving time to first token": "serving_ttft", "serving request latency": "serving_latency",
            "training step time": "training_step_time", "training time per layer": "training_layer_time",
            "training memory": "training_memory"}
    rows = re.findall(r"^\| ([a-z ]+) \| (\d+) \| ([\d.]+%) \| ([\d.]+%) \|$", (ROOT / "docs" / "index.md").read_text(),
                      flags=re.M)
    assert [r[0] for r in rows] == list(keys)
    for label, points, median, worst in rows:
        key = keys[label]
        assert (points, median, worst) == (str(got[f"{key}_points"]), units.format(got[f"{key}_median_error"], "fraction"),
                                           units.format(got[f"{key}_max_error"], "fraction")), label
