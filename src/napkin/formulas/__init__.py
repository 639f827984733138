"""Pure formulas over floats (and numpy arrays where the planner sweeps them).

One module per domain. Each function is keyword-only after its first argument, has
units in its argument names, and a docstring of three parts: the equation, the
**Trap:** it guards against, and the **Source:**.
"""

from __future__ import annotations

import functools


@functools.cache
def citation(path: str) -> dict[str, str]:
    """{function, equation, trap, source} of the formula function at ``path`` ("napkin.formulas.m.f").

    The docstring's first paragraph is the equation; the paragraphs starting **Trap:** and
    **Source:** (each running to the next blank line or label) are the trap and the source.
    This is how ``--explain --cite`` and the web page show a step's formula with its trap
    and source: from the docstring of the function that ran, so they cannot drift apart.
    """
    import importlib
    import inspect

    module, _, name = path.rpartition(".")
    fn = importlib.import_module(module)
    for part in name.split("."):
        fn = getattr(fn, part)
    doc = inspect.cleandoc(fn.__doc__ or "")
    paragraphs = doc.split("\n\n")
    out = {"function": path.removeprefix("napkin.formulas."), "equation": paragraphs[0].strip() if paragraphs else "",
           "trap": "", "source": ""}
    label = None
    for line in doc.splitlines():
        text = line.strip()
        for key in ("trap", "source"):
            tag = key.capitalize() + ":"
            if text.startswith(tag):
                label, text = key, text[len(tag):].strip()
                break
        else:
            if not text:
                label = None
                continue
        if label:
            out[label] = (out[label] + " " + text).strip()
    return out
