"""The same calculation as a shell command: what "Copy as CLI command" gives.

``cli_command("memory", {"model": "llama-3.1-70b"})`` is ``napkin memory --model llama-3.1-70b``:
options spelled as the CLI spells them, units kept as typed, quoted for the shell.
"""

from __future__ import annotations

import shlex
from typing import Any

from napkin.request import field_name
from napkin.web.calculation import calculator, command_words, field_infos


def cli_command(name: str, raw: dict[str, Any]) -> str:
    """The same calculation as a shell command: ``napkin memory --model llama-3.1-70b ...``."""
    calc = calculator(name)
    infos = field_infos(calc)
    given: dict[str, Any] = {}
    for key, val in raw.items():
        given[field_name(infos, key, val, see="see GET /api")] = val
    args: list[str] = []
    opts: list[str] = []
    for info in infos.values():
        if info.name == "vary" and given.get("vary"):  # hidden from the form, a repeated --vary on the command line
            items = given["vary"] if isinstance(given["vary"], list) else [given["vary"]]
            opts += [w for item in items if str(item).strip() for w in ("--vary", str(item).strip())]
            continue
        if info.name not in given or info.meta.get("hidden"):
            continue
        val = given[info.name]
        if val is None or (isinstance(val, str) and not val.strip() and info.kind != "bool") or val in ([], {}):
            continue
        if info.kind == "bool":
            on = val if isinstance(val, bool) else str(val).strip().lower() in ("1", "true", "yes", "on", "y")
            if on and info.default is not True:
                opts.append(info.option)
            elif not on and info.default is True:
                opts.append("--no-" + info.option[2:])
            continue
        if isinstance(val, dict):
            text = ",".join(f"{k}={v}" for k, v in val.items())
        elif isinstance(val, list):
            text = ",".join(str(v) for v in val)
        else:
            text = str(val).strip()
        if info.meta.get("positional"):
            args += _split_list(text) if info.container == "list" else [text]
        else:
            opts += [info.option, text]
    if any(a.startswith("-") for a in args):  # text such as "- a bullet" is not an option: after "--"
        return shlex.join(command_words(name) + opts + ["--"] + args)
    return shlex.join(command_words(name) + args + opts)


def _split_list(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]
