"""The house rules (docs and issue 12), checked on the source's syntax trees: no import runs.

1. A calculator (a module or package registered in ``napkin.calculators.CALCULATORS``) never
   imports another calculator; composition goes through the registry. The other modules
   under ``calculators/`` (the shared layer) import no calculator.
2. ``plan/``, ``ledger/``, ``measure/`` and ``web/`` import no calculator internals (only
   ``napkin.calculators`` itself and the shared layer), unless the module is that calculator's own.
3. Nothing outside ``cli/`` imports ``napkin.cli``; nothing inside the package imports the
   ``napkin`` face (``from napkin import calculate``): it imports submodules.
4. Every public function in ``formulas/`` is called by product code (``src/napkin``), not only
   by tests; a reference as ``cites=`` beside an inline copy of its arithmetic is not a call, and a
   call from another formula counts only when that formula is itself called (transitively) from
   outside ``formulas/``.

ALLOWED lists the violations the tree had when this test was written (issue 12), each as
(file, the module it imports) or, for rule 4, (file, the function nothing calls). The helpers
moving the calculators remove theirs; an entry that no longer occurs fails the test too, so
the list only shrinks. Done means ALLOWED is empty.
"""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

from napkin.calculators import CALCULATORS

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = SRC / "napkin"

ALLOWED: dict[int, set[tuple[str, str]]] = {
    1: set(),
    2: set(),
    3: set(),
    4: set(),
}

# where calculators live: a registered module's calculator is the module or package directly inside one of these
CALCULATOR_HOMES = ("napkin", "napkin.calculators", "napkin.plan", "napkin.ledger")
# rule 2: layers that may use the registry and the shared layer, never a calculator's internals
LAYERS = ("napkin.plan", "napkin.ledger", "napkin.measure", "napkin.web")


class Import(NamedTuple):
    file: str  # relative to the repository: src/napkin/web/app.py
    module: str  # the module imported: napkin.calculators.serve
    name: str | None  # for `from M import name` where name is not a module: the name
    line: int


def module_of(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_module(dotted: str) -> bool:
    base = SRC.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


@functools.cache
def sources() -> dict[Path, ast.Module]:
    return {p: ast.parse(p.read_text(), str(p)) for p in sorted(PACKAGE.rglob("*.py"))}


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _absolute(path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module_of(path).split(".")
    if path.name != "__init__.py":
        package.pop()
    base = package[: len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


@functools.cache
def imports() -> list[Import]:
    out = []
    for path, tree in sources().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                out += [Import(rel(path), a.name, None, node.lineno) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(path, node)
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    out.append(Import(rel(path), sub, None, node.lineno) if is_module(sub)
                               else Import(rel(path), base, a.name, node.lineno))
    return out


def calculator_home(module: str) -> str:
    """The module or package that is the calculator registered at ``module``."""
    parts = module.split(".")
    for i in range(len(parts) - 1, 0, -1):
        if ".".join(parts[:i]) in CALCULATOR_HOMES:
            return ".".join(parts[: i + 1])
    return module


def homes() -> set[str]:
    return {calculator_home(target.split(":")[0]) for target in CALCULATORS.values()}


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def home_of(module: str) -> str | None:
    return next((h for h in homes() if within(module, h)), None)


def file_module(file: str) -> str:
    return module_of(ROOT / file)


# ------------------------------------------------------------------------------ rules 1 and 2
def violations_1_2() -> dict[int, set[tuple[str, str]]]:
    out: dict[int, set[tuple[str, str]]] = {1: set(), 2: set()}
    for imp in imports():
        importer = file_module(imp.file)
        target = home_of(imp.module)
        if target is None or within(importer, target):
            continue
        if home_of(importer) is not None or within(importer, "napkin.calculators"):
            out[1].add((imp.file, imp.module))
        elif any(within(importer, layer) for layer in LAYERS):
            out[2].add((imp.file, imp.module))
    return out


# ------------------------------------------------------------------------------------ rule 3
def violations_3() -> set[tuple[str, str]]:
    out = set()
    for imp in imports():
        importer = file_module(imp.file)
        if within(imp.module, "napkin.cli") and not within(importer, "napkin.cli"):
            out.add((imp.file, imp.module))
        if importer != "napkin" and imp.module == "napkin":  # the face: a name of napkin/__init__.py
            out.add((imp.file, f"napkin.{imp.name}" if imp.name else "napkin"))
    return out


# ------------------------------------------------------------------------------------ rule 4
def formula_functions() -> dict[tuple[str, str], str]:
    """(module, name) -> file of every public module-level function in formulas/ (private modules aside)."""
    out = {}
    for path, tree in sources().items():
        module = module_of(path)
        if not within(module, "napkin.formulas") or (path.name.startswith("_") and path.name != "__init__.py"):
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
                out[(module, node.name)] = rel(path)
    return out


def _bindings(path: Path, tree: ast.Module) -> dict[str, str]:
    """Local name -> the dotted thing it stands for, from the file's imports and its own definitions."""
    module = module_of(path)
    out = {n.name: f"{module}.{n.name}" for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(path, node)
            for a in node.names:
                out[a.asname or a.name] = f"{base}.{a.name}"
    return out


def _dotted(node: ast.AST, bindings: dict[str, str]) -> str | None:
    attrs = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in bindings:
        return None
    return ".".join([bindings[node.id], *reversed(attrs)])


def _cites_values(tree: ast.Module) -> set[int]:
    return {id(k.value) for n in ast.walk(tree) if isinstance(n, ast.Call) for k in n.keywords if k.arg == "cites"}


def _own_body(tree: ast.Module, module: str) -> dict[int, str]:
    """id of each node inside a top-level function -> that function's dotted name."""
    out = {}
    for fn in tree.body:
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for n in ast.walk(fn):
                out[id(n)] = f"{module}.{fn.name}"
    return out


def _formula_graph() -> tuple[set[str], dict[str, set[str]]]:
    """(functions of formulas/ that product code outside formulas/ uses, {formula function: the formula functions
    it uses}): uses are calls or references as values, never ``cites=``; private functions and modules included."""
    functions = {f"{module_of(p)}.{n.name}" for p, t in sources().items() if within(module_of(p), "napkin.formulas")
                 for n in t.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    roots: set[str] = set()
    edges: dict[str, set[str]] = {}
    for path, tree in sources().items():
        module = module_of(path)
        bindings, cites, own = _bindings(path, tree), _cites_values(tree), _own_body(tree, module)
        inside = within(module, "napkin.formulas")
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Name, ast.Attribute)) or not isinstance(node.ctx, ast.Load):
                continue
            name = _dotted(node, bindings)
            if name not in functions or id(node) in cites:
                continue
            if not inside:
                roots.add(name)
            elif own.get(id(node)) not in (None, name):  # recursion and module-level code are not callers
                edges.setdefault(own[id(node)], set()).add(name)
    return roots, edges


def called_formulas() -> set[str]:
    """Dotted names of formula functions product code uses: directly from outside formulas/, or through formula
    functions that are themselves so used (a formula called only by a formula nothing calls is dead too)."""
    roots, edges = _formula_graph()
    live, todo = set(roots), list(roots)
    while todo:
        for callee in edges.get(todo.pop(), ()):
            if callee not in live:
                live.add(callee)
                todo.append(callee)
    return live


def violations_4() -> set[tuple[str, str]]:
    called = called_formulas()
    return {(file, name) for (module, name), file in formula_functions().items() if f"{module}.{name}" not in called}


# ------------------------------------------------------------------------------------- tests
def check(rule: int, found: set[tuple[str, str]]) -> None:
    new = sorted(found - ALLOWED[rule])
    gone = sorted(ALLOWED[rule] - found)
    assert not new, f"rule {rule} broken (see this file's docstring): " + "; ".join(f"{f} -> {m}" for f, m in new)
    assert not gone, f"rule {rule}: no longer true, remove from ALLOWED: " + "; ".join(f"{f} -> {m}" for f, m in gone)


def test_rule_1_calculators_compose_through_the_registry():
    check(1, violations_1_2()[1])


def test_rule_2_layers_import_no_calculator_internals():
    check(2, violations_1_2()[2])


def test_rule_3_no_cli_outside_cli_and_no_face_inside_the_package():
    check(3, violations_3())


def test_rule_4_every_public_formula_has_a_product_caller():
    check(4, violations_4())


# --------------------------------------------------------- the checker itself, on small trees
@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A throwaway package ``napkin`` under tmp_path: write files into it, then run the checks on it."""
    src = tmp_path / "src"
    this = sys.modules[__name__]
    monkeypatch.setattr(this, "ROOT", tmp_path)
    monkeypatch.setattr(this, "SRC", src)
    monkeypatch.setattr(this, "PACKAGE", src / "napkin")
    for fn in (sources, imports):
        fn.cache_clear()
    registry = {"a": "napkin.calculators.a:A", "b": "napkin.calculators.b.run:B", "p": "napkin.plan.p:P"}
    monkeypatch.setattr(this, "CALCULATORS", registry)

    def write(files: dict[str, str]) -> None:
        for name, text in files.items():
            path = src / "napkin" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        for pkg in {p.parent for p in (src / "napkin").rglob("*.py")} | {src / "napkin"}:
            (pkg / "__init__.py").touch()
        sources.cache_clear()
        imports.cache_clear()

    yield write
    sources.cache_clear()
    imports.cache_clear()


def test_the_checker_finds_a_calculator_importing_another(tree):
    tree({"calculators/a.py": "from napkin.calculators.b.run import x\nfrom napkin.calculators import resolve\n",
          "calculators/b/run.py": "from . import inputs\nfrom napkin.calculators.b import model\n",
          "calculators/b/inputs.py": "", "calculators/b/model.py": "", "calculators/resolve.py": "",
          "calculators/steps.py": "from napkin.calculators import a\n",
          "plan/p.py": "from napkin.calculators.resolve import x\n",
          "web/views.py": "from napkin.plan import p\nfrom napkin.calculators import Calculator\n"})
    found = violations_1_2()
    assert found[1] == {("src/napkin/calculators/a.py", "napkin.calculators.b.run"),
                        ("src/napkin/calculators/steps.py", "napkin.calculators.a")}
    assert found[2] == {("src/napkin/web/views.py", "napkin.plan.p")}


def test_the_checker_finds_the_face_and_the_cli(tree):
    tree({"__init__.py": "from napkin.errors import E\n", "errors.py": "", "units.py": "",
          "ledger/drift.py": "def f():\n    from napkin import calculate, units\n    from napkin.cli.common import x\n",
          "cli/train.py": "from napkin.cli.common import x\nfrom napkin import units\n", "cli/common.py": "",
          "measure/__init__.py": "import napkin\n"})
    assert violations_3() == {("src/napkin/ledger/drift.py", "napkin.calculate"),
                              ("src/napkin/ledger/drift.py", "napkin.cli.common"),
                              ("src/napkin/measure/__init__.py", "napkin")}


def test_the_checker_finds_formulas_nothing_calls(tree):
    tree({"formulas/memory.py": "def used(n, *, b):\n    return n * b\n\n"
                                "def helper(x):\n    return used(x, b=2)\n\n"
                                "def cited_only(x):\n    return cited_only(x - 1)\n\n"
                                "def _private(x):\n    return x\n",
          "formulas/flops.py": "def train(n):\n    return 6 * n\n\ndef spare(n):\n    return n\n",
          "formulas/_array.py": "def where(x):\n    return x\n",
          "calculators/a.py": "from napkin.formulas import flops as F\nfrom napkin.formulas.memory import helper, "
                              "cited_only\n\ndef run(r):\n    r.step('x', cites=cited_only, value=helper(1))\n"
                              "    return list(map(F.train, [1]))\n"})
    assert violations_4() == {("src/napkin/formulas/memory.py", "cited_only"),
                              ("src/napkin/formulas/flops.py", "spare")}


def test_a_formula_called_only_by_dead_formulas_is_dead_too(tree):
    tree({"formulas/serving.py": "def step(x):\n    return parts(x) + _helper(x)\n\n"
                                 "def parts(x):\n    return x\n\n"
                                 "def _helper(x):\n    return inner(x)\n\n"
                                 "def inner(x):\n    return x\n\n"
                                 "def live(x):\n    return _via(x)\n\n"
                                 "def _via(x):\n    return reached(x)\n\n"
                                 "def reached(x):\n    return x\n",
          "calculators/a.py": "from napkin.formulas import serving as sv\n\ndef run():\n    return sv.live(1)\n"})
    assert violations_4() == {("src/napkin/formulas/serving.py", "step"),
                              ("src/napkin/formulas/serving.py", "parts"),
                              ("src/napkin/formulas/serving.py", "inner")}


# ------------------------------------------------------------------ rooms small enough to live in
MODULE_LINES = 420  # "no file over about 400 lines" (issue 12)
FUNCTION_LINES = 80  # "no function over about 80"
SIZE_EXEMPT: set[str] = set()  # none: units.py is split (parsing; unitfmt.py formatting; unitconst.py)


def sizes() -> tuple[dict[str, int], dict[str, int]]:
    """({module: lines} over the limit, {module:function: lines} over the limit)."""
    modules, functions = {}, {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        if rel in SIZE_EXEMPT:
            continue
        text = path.read_text()
        if text.count("\n") > MODULE_LINES:
            modules[rel] = text.count("\n")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > FUNCTION_LINES:
                    functions[f"{rel}:{node.name}"] = n
    return modules, functions


def test_no_module_or_function_is_too_big_to_read():
    modules, functions = sizes()
    assert modules == {}, f"split these modules (over {MODULE_LINES} lines): {modules}"
    assert functions == {}, f"split these functions (over {FUNCTION_LINES} lines): {functions}"


def test_the_size_check_sees_a_long_function(tree):
    tree({"formulas/long.py": "def f():\n" + "    x = 1\n" * 90 + "    return x\n"})
    assert sizes()[1] == {"src/napkin/formulas/long.py:f": 92}
