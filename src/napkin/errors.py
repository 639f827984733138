"""One error hierarchy. Every message names the field, the bad value and the fix.

The CLI prints ``str(error)`` on one line and exits 1; the web API returns it with
status 422. Nothing here is raised for a result that merely does not fit: "does not
fit" is a result, not an exception.
"""

from __future__ import annotations


class NapkinError(Exception):
    """Base class of every error napkin raises on purpose."""


class InputError(NapkinError, ValueError):
    """A value a user gave is impossible or of the wrong kind.

    ``InputError("mfu", 40, "must be in (0, 1]", "did you mean 0.40?")`` reads
    ``mfu must be in (0, 1]; got 40 (did you mean 0.40?)``.
    """

    def __init__(self, field: str, value: object, problem: str, fix: str | None = None):
        self.field = field
        self.value = value
        self.problem = problem
        self.fix = fix
        shown = quote(value if isinstance(value, str) else _show(value))
        msg = f"{field} {problem}; got {shown}" if problem.startswith(("must", "is", "has", "needs", "exceeds", "does", "cannot")) else f"{field}: {problem}; got {shown}"
        if fix:
            msg += f" ({fix})"
        super().__init__(msg)

    def to_dict(self) -> dict:
        return {"field": self.field, "value": _jsonable(self.value), "problem": self.problem,
                "fix": self.fix, "message": str(self)}


class UnknownName(NapkinError, KeyError):
    """A catalog name that does not exist; the message lists the closest ones."""

    def __init__(self, what: str, name: str, choices: list[str], field: str | None = None):
        self.what = what
        self.name = name
        self.field = field or what
        self.matches = closest(name, choices)
        self.choices = list(choices)
        msg = f"unknown {what} {quote(repr(name))}"
        if self.matches:
            msg += f"; closest: {', '.join(self.matches)}"
        msg += f" (see `napkin catalog {what}s`)" if what in ("gpu", "model", "price") else ""
        self.message = msg
        super().__init__(msg)

    def __str__(self) -> str:  # KeyError would quote the message
        return self.message

    def to_dict(self) -> dict:
        return {"field": self.field, "value": self.name, "problem": f"unknown {self.what}",
                "fix": self.fix, "message": str(self)}

    @property
    def fix(self) -> str | None:
        """The closest names, or every name when there are few and none is close."""
        if self.matches:
            return f"did you mean {' or '.join(self.matches)}?"
        if 0 < len(self.choices) <= 30:
            return f"one of {', '.join(self.choices)}"
        return None


class UnsupportedPrecision(InputError):
    """The accelerator has no dense peak at that precision (fp8 on an A100)."""


def closest(name: str, choices: list[str], n: int = 3) -> list[str]:
    """The choices nearest to ``name``: substring matches first, then by similarity."""
    import difflib

    low = name.lower()
    subs = [c for c in choices if low and (low in c.lower() or c.lower() in low)]
    near = difflib.get_close_matches(low, [c.lower() for c in choices], n=n, cutoff=0.5)
    byl = {c.lower(): c for c in choices}
    out: list[str] = []
    for c in subs + [byl[x] for x in near]:
        if c not in out:
            out.append(c)
    return out[:n]


_CONTROL = None


def quote(text: object) -> str:
    """``text`` with control characters escaped, so what a user typed (or a log held) prints on one line.

    A newline becomes ``\\n``, an ESC ``\\x1b``: an echoed value can neither forge a second error
    line nor move the terminal's cursor. Printable text, non-ASCII letters included, is unchanged.
    """
    global _CONTROL
    s = str(text)
    if s.isprintable():
        return s
    if _CONTROL is None:
        import re

        _CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), s)


def quote_lines(text: str) -> str:
    """Text for the terminal with each line quoted (:func:`quote`): a name or note from the user's input
    stays on its line, and the report's own line breaks are kept."""
    return "\n".join(quote(line) for line in text.split("\n"))


def _show(value: object) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _jsonable(value: object) -> object:
    return value if isinstance(value, (int, float, str, bool, type(None))) else str(value)
