"""The formula reference of the documentation site, generated from napkin.formulas at build time.

* MkDocs hooks (``hooks:`` in mkdocs.yml): a page per module of ``napkin.formulas`` (each one
  ``::: napkin.formulas.<module>``, rendered by mkdocstrings), added to the nav after
  ``reference/index.md``, whose list of modules is written here too. A new formula module is in
  the reference without anyone listing it.
* :class:`FormulaDocstrings`, a griffe extension (mkdocstrings' ``extensions:``): each formula's
  docstring laid out as its three parts: the equation as code, the trap as a warning, the source
  as a quotation. The parts are split as ``napkin.formulas.citation`` splits them for
  ``--explain --cite``: the first paragraph is the equation; a paragraph starting ``Trap:`` or
  ``Source:`` is that part.

Read from the source files (ast), never by importing napkin: the build needs only the docs extra.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

import griffe

FORMULAS = Path(__file__).resolve().parents[1] / "src" / "napkin" / "formulas"
REFERENCE = "reference"
PACKAGE = "napkin.formulas"


def formula_modules() -> list[str]:
    """The public modules of napkin.formulas, by name."""
    return sorted(p.stem for p in FORMULAS.glob("*.py") if not p.stem.startswith("_"))


def summary(module: str) -> str:
    """The first sentence of a module's docstring."""
    doc = ast.get_docstring(ast.parse((FORMULAS / f"{module}.py").read_text())) or ""
    return " ".join(doc.split("\n\n")[0].split())


# ------------------------------------------------------------------ MkDocs hooks
def on_config(config: Any) -> Any:
    """The nav's formula reference: the overview, then a page per module."""
    for entry in config["nav"]:
        if isinstance(entry, dict) and "Formula reference" in entry:
            overview = f"{REFERENCE}/index.md"
            pages = [p for p in entry["Formula reference"] if overview in (p, *getattr(p, "values", list)())]
            entry["Formula reference"] = pages + [{m: f"{REFERENCE}/{m}.md"} for m in formula_modules()]
    return config


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for module in formula_modules():
        content = f"# {PACKAGE}.{module}\n\n::: {PACKAGE}.{module}\n"
        files.append(File.generated(config, f"{REFERENCE}/{module}.md", content=content))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if page.file.src_uri != f"{REFERENCE}/index.md":
        return markdown
    rows = [f"| [`{m}`]({m}.md) | {summary(m)} |" for m in formula_modules()]
    return markdown.rstrip() + "\n\n| module | what it computes |\n|---|---|\n" + "\n".join(rows) + "\n"


# ------------------------------------------------------------------ griffe extension
def three_parts(doc: str) -> tuple[str, list[str], str, str]:
    """(equation, other paragraphs, trap, source) of a formula's docstring.

    As ``napkin.formulas.citation`` reads it: the first paragraph is the equation; a line starting
    ``Trap:`` or ``Source:`` starts that part, which runs to the next label or blank line; any other
    line is description.
    """
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    equation = paragraphs[0].strip("\n")
    parts = {"trap": "", "source": ""}
    rest: list[list[str]] = [[]]
    label = None
    for line in "\n\n".join(paragraphs[1:]).splitlines():
        text = line.strip()
        if not text:
            label = None
            if rest[-1]:
                rest.append([])
            continue
        for key in parts:
            tag = key.capitalize() + ":"
            if text.startswith(tag):
                label, text = key, text[len(tag):].strip()
                break
        if label:
            parts[label] = (parts[label] + " " + text).strip()
        else:
            rest[-1].append(line)
    return equation, ["\n".join(p) for p in rest if p], parts["trap"], parts["source"]


def literal(text: str) -> str:
    """Prose of a docstring as markdown that reads as written: ``6·N*·D*`` keeps its stars."""
    return text.replace("\\", "\\\\").replace("*", "\\*")


def as_markdown(doc: str) -> str:
    equation, rest, trap, source = three_parts(doc)
    out = [f"```text\n{equation}\n```"]
    out += [literal(p) for p in rest]
    if trap:
        out.append(f'!!! warning "Trap"\n    {literal(trap)}')
    if source:
        out.append(f'!!! quote "Source"\n    {literal(source)}')
    return "\n\n".join(out)


class FormulaDocstrings(griffe.Extension):
    """Each public formula's docstring as equation, trap and source."""

    def on_function_instance(self, *, func: griffe.Function, **kwargs: Any) -> None:
        if not func.path.startswith(PACKAGE + ".") or func.name.startswith("_") or func.docstring is None:
            return
        if not isinstance(func.parent, griffe.Module):  # a formula is a module-level function
            return
        func.docstring.value = as_markdown(func.docstring.value)
