"""A calculator that fails to load fails loudly: in the registry, on the web and on the command line.

Found in the review of issue 12: the loaders of ``napkin.calculators``, ``napkin.web`` and
``napkin.cli`` turned an import error into "not part of this build yet" (a 404 that the API
test counted as a pass) or left the calculator out of ``GET /api``, so a calculator broken by
a refactor could disappear from the page and from the suite without a failing test.
"""

from __future__ import annotations

import sys

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from napkin import calculators, cli
from napkin.web.app import create_app

BROKEN_SOURCE = "raise RuntimeError('half-written module')\n"


@pytest.fixture(params=["raises", "missing"])
def broken(request, monkeypatch, tmp_path):
    """A registered calculator whose module raises while importing, or whose napkin module is missing."""
    if request.param == "raises":
        (tmp_path / "napkin_test_broken_calc.py").write_text(BROKEN_SOURCE)
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.delitem(sys.modules, "napkin_test_broken_calc", raising=False)
        target = "napkin_test_broken_calc:BROKEN"
    else:  # the case the old loaders called "not built yet": a napkin module that does not exist
        target = "napkin.calculators.no_such_calculator:BROKEN"
    monkeypatch.setitem(calculators.CALCULATORS, "broken", target)
    return target


def test_the_registry_raises_naming_the_calculator(broken):
    with pytest.raises(ImportError, match=f"calculator 'broken' \\({broken}\\) failed to import"):
        calculators.get("broken")
    with pytest.raises(ImportError, match="calculator 'broken'"):
        calculators.available()


def test_a_registered_name_that_is_not_a_calculator_raises(monkeypatch):
    monkeypatch.setitem(calculators.CALCULATORS, "broken", "napkin.units:parse")
    with pytest.raises(ImportError, match="napkin.units:parse is not a Calculator"):
        calculators.get("broken")


def test_the_web_answers_500_never_a_page_without_the_calculator(broken):
    client = TestClient(create_app(warm=False))
    listing = client.get("/api")
    assert listing.status_code == 500  # not a listing that quietly leaves the calculator out
    r = client.post("/api/broken", json={})
    assert r.status_code == 500  # not 404 "not part of this build yet"
    assert r.json()["message"] == "internal error: the calculation failed"


def test_the_listing_is_every_registered_calculator():
    client = TestClient(create_app(warm=False))
    assert [c["name"] for c in client.get("/api").json()["calculators"]] == list(calculators.CALCULATORS)


def test_a_command_whose_module_fails_to_import_raises(broken, monkeypatch):
    module = broken.split(":")[0]
    monkeypatch.setitem(cli.COMMANDS, "broken", (f"{module}:broken", "a command that does not load"))
    result = CliRunner().invoke(cli.cli, ["broken"])
    assert result.exit_code != 0
    assert isinstance(result.exception, (ImportError, RuntimeError)), result.output
    assert "not part of this build" not in result.output


@pytest.mark.parametrize("name", list(cli.COMMANDS))
def test_every_command_loads(name):
    command = cli.cli.get_command(None, name)
    assert command is not None and command.name == name


@pytest.fixture
def fresh_server_module(monkeypatch):
    """`napkin web` imports napkin.web.server afresh (not the copy this process already loaded)."""
    import napkin.web

    monkeypatch.delitem(sys.modules, "napkin.web.server", raising=False)
    monkeypatch.delattr(napkin.web, "server", raising=False)
    return monkeypatch


def test_web_without_its_extra_says_which_package_is_missing(fresh_server_module, run_cli):
    fresh_server_module.setitem(sys.modules, "uvicorn", None)  # as if the web extra were not installed
    r = run_cli("web", "--port", "0", code=1)
    assert r.stderr == ("error: `napkin web` needs the web extra (uvicorn is missing): "
                        "pip install 'llm-napkin[web]'\n")


def test_web_with_a_missing_napkin_module_is_a_broken_build_not_a_missing_extra(fresh_server_module):
    """A bug is reported as one (the CLI's internal-error line), not as a package to install."""
    fresh_server_module.setitem(sys.modules, "napkin.web.server", None)
    result = CliRunner().invoke(cli.cli, ["web", "--port", "0"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: internal error (ModuleNotFoundError: import of napkin.web.server halted")
    assert "web extra" not in result.stderr
