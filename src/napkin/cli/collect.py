"""The raw values of a command line: options given (and a plan file under them), click-free.

Shared by the click commands (:mod:`napkin.cli.common`) and the quick path
(:mod:`napkin.cli.quick`), so both read a command line into the same raw values.
"""

from __future__ import annotations

from typing import Any

from napkin.errors import InputError
from napkin.request import read_config

OPTION_TWIN = "__option"  # click name of the --option twin of a positional field


def collect(request_cls: type, params: dict[str, Any], config: str | None) -> dict[str, Any]:
    """Raw values: the plan file first, then every option given on the line, which wins.

    What a flag replaces in the plan (its alternatives, the defaults it froze that depended on it,
    per-part values of parts no longer named) is :func:`napkin.plan_files.merge`'s to say.
    """
    from napkin.plan_files import merge

    given: dict[str, Any] = {}
    for k, v in params.items():
        if v is None or v == () or v == []:
            continue
        if k.endswith(OPTION_TWIN):
            k = k[: -len(OPTION_TWIN)]
            twin = params.get(k)
            if twin not in (None, (), []):
                raise InputError(k, v, f"is given twice (as an argument {twin!r} and as --{k.replace('_', '-')})",
                                 "give it once")
        given[k] = list(v) if isinstance(v, tuple) else v
    return merge(request_cls, dict(read_config(config)) if config else {}, given)
