"""``--csv FILE``: a table's rows written to a CSV file, at the edge where the table is printed.

The rows are the ones ``--json`` carries (a sweep's or a planner's), in base units: seconds,
bytes, FLOP/s, USD, fractions as fractions; a figure with parts (a memory breakdown, $/M on
two denominators) becomes one column per part, ``name.part``. Numbers keep every digit
(``repr``), so a spreadsheet reads what napkin computed, not what it printed.
"""

from __future__ import annotations

import csv
from typing import Any

import click

from napkin.errors import InputError

csv_option = click.Option(["--csv", "csv_path"], metavar="FILE.csv",
                          help="Write every row of the table to a CSV file (base units: seconds, bytes, USD, "
                               "fractions; one column per figure).")


def _flat(row: dict, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in row.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return " ".join(_cell(x) for x in v)
    return str(v)


def write_csv(path: str, rows: list[dict]) -> None:
    """Write ``rows`` (dicts, nested dicts flattened) to ``path``, every key a column in first-seen order.

    A regular file only (:func:`napkin.files.write_file`): a FIFO, a device or a folder is one line, never a wait.
    """
    import io

    from napkin.errors import quote
    from napkin.files import write_file

    flat = [_flat(r) for r in rows]
    columns: dict[str, None] = {}
    for r in flat:
        columns.update(dict.fromkeys(r))
    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow(list(columns))
    for r in flat:
        w.writerow([_cell(r.get(c)) for c in columns])
    write_file(path, "csv", buf.getvalue())
    click.echo(f"wrote {len(rows):,} rows to {quote(path)}", err=True)


def export(params: dict, rows: list[dict] | None, *, what: str) -> None:
    """``--csv``: write ``rows``; a command with no table to write says which option gives one."""
    path = params.get("csv_path")
    if not path:
        return
    if rows is None:
        raise InputError("csv", path, f"has no table to write: {what}", "drop --csv")
    write_csv(path, rows)
