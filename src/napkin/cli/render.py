"""Terminal rendering with rich (imported only when stdout is a terminal)."""

from __future__ import annotations

from typing import Any

from napkin import units

# columns shown by `napkin catalog` for each table, with their unit kinds
CATALOG_COLUMNS = {
    "gpus": [("key", None), ("name", None), ("dense_flops_per_s.bf16", "flops_per_s"),
             ("dense_flops_per_s.fp8", "flops_per_s"), ("memory_bytes", "bytes"),
             ("memory_bytes_per_s", "bytes_per_s"), ("link_bytes_per_s_bidirectional", "bytes_per_s"),
             ("tdp_watts", "watts")],
    "models": [("key", None), ("name", None), ("params", "count"), ("active_params", "count"),
               ("n_layers", None), ("d_model", None), ("n_heads", None), ("n_kv_heads", None),
               ("attention", None), ("kv_bytes_per_token_bf16", "bytes")],
    "prices": [("kind", None), ("key", None), ("usd_per_gpu_hour", "usd_per_hour"),
               ("usd_per_million_input", "usd_per_million"), ("usd_per_million_output", "usd_per_million"),
               ("date", None)],
}


def _get(row: dict, path: str) -> Any:
    cur: Any = row
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def catalog_table(rows: list[dict], which: str) -> list[list[str]]:
    cols = CATALOG_COLUMNS[which]
    out = [[c.split(".")[-1] if "." not in c else c.replace("dense_flops_per_s.", "") for c, _ in cols]]
    for row in rows:
        out.append(["-" if _get(row, c) is None else units.fmt_auto(_get(row, c), k) for c, k in cols])
    return out


def print_rows(rows: list[dict], which: str) -> None:
    import sys

    table = catalog_table(rows, which)
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.table import Table

        t = Table(title=f"napkin catalog {which}")
        for h in table[0]:
            t.add_column(h)
        for r in table[1:]:
            t.add_row(*r)
        Console().print(t)
        return
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())


def print_rich(report: Any) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    t = Table(title=report.title, show_header=False, title_justify="left")
    t.add_column("result", style="bold")
    t.add_column("value", justify="right")
    for k, v in report.rows():
        t.add_row(escape(k), escape(v))
    console.print(t)
    for w in report.warnings:
        console.print(f"[yellow]warning {escape('[' + w.code + ']')}[/yellow]: {escape(w.message)}", highlight=False)
    guessed = [a for a in report.assumptions if a.basis in ("assumed", "reference")]
    if guessed:
        console.print("[dim]assumed: " + escape("; ".join(
            f"{a.name} = {units.fmt_auto(a.value, a.unit)}" for a in guessed)) + "[/dim]", highlight=False)
    for n in report.notes:
        console.print(f"[dim]note: {escape(n)}[/dim]", highlight=False)
