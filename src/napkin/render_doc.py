"""Pages for the journey of one prompt and its card: plain text, Markdown, HTML, rich.

Every function takes the plain data of a Report (``report.to_dict()``-shaped: the rungs
with their figures, units and working; the card with its rows), so the web page and a
saved JSON file render the same way. No template engine: strings, escaped.
"""

from __future__ import annotations

import html as _html
from typing import Any

from napkin import units
from napkin.errors import quote

SUBTITLE = "Seven rungs from the tokenizer to the training run, every number with its working."


def data(report: Any) -> dict:
    """A Report's plain data with its title: what every renderer here takes."""
    return {**report.to_dict(), "title": report.title}


def _fmt(value: Any, kind: str | None) -> str:
    return units.fmt_auto(value, kind)


def _figure_rows(rung: dict) -> list[tuple[str, str, str]]:
    """(figure, value, working) for each figure of a rung, in the order earned."""
    out = []
    for key, value in rung["figures"].items():
        if key == "prompt":
            continue
        out.append((key, _fmt(value, rung["units"].get(key)), rung["working"].get(key, "")))
    return out


def _meter(rung: dict) -> str:
    return "Σ " + units.format(rung["meter_flops"], "flops")


def _guessed(d: dict) -> list[dict]:
    return [a for a in d.get("assumptions", []) if a["basis"] in ("assumed", "reference")]


def _footer(d: dict) -> list[str]:
    """The inputs that were assumed, and the parameters fitted to published measurements, as the CLI names them."""
    out = []
    for label, picked in (("assumed", _guessed(d)),
                          ("fitted", [a for a in d.get("assumptions", []) if a["basis"] == "fitted"])):
        if picked:
            out.append(f"{label}: " + "; ".join(f"{a['name']} = {_fmt(a['value'], a['unit'])}" for a in picked))
    return out


def _sum_line(d: dict) -> str:
    parts = [f"{r['title'].lower()} {units.format(r['flops'], 'flops')}" for r in d["rungs"] if r["flops"]]
    return f"Σ {units.format(d['meter_flops'], 'flops')} = " + " + ".join(parts) + f"   ({d['flops_convention']})"


# ------------------------------------------------------------------------------ plain text
def journey_text(d: dict) -> str:
    """The journey as aligned plain text: what the CLI prints when output is not a terminal."""
    lines = [d["title"], f'prompt: "{quote(d["prompt"])}"']  # its control characters escaped
    for rung in d["rungs"]:
        rows = _figure_rows(rung)
        kw = max((len(k) for k, _, _ in rows), default=0)
        vw = max((len(v) for _, v, _ in rows), default=0)
        head = f"{rung['n']}. {rung['title']}"
        lines += ["", head + " " * max(2, 72 - len(head) - len(_meter(rung))) + _meter(rung)]
        for k, v, w in rows:
            line = f"  {k.ljust(kw)}  {v.rjust(vw)}"
            if w:
                line += f"  = {w}"
            lines.append(line.rstrip())
        lines += [f"  note: {n}" for n in rung["notes"]]
    lines += ["", _sum_line(d)]
    lines += [f"warning [{w['code']}]: {w['message']}" for w in d.get("warnings", [])]
    lines += _footer(d)
    return "\n".join(lines)


def card_text(d: dict) -> str:
    rows = d["rows"]
    cols = [("number", [r["name"] for r in rows]), ("value", [r["value_text"] for r in rows]),
            ("formula", [r["formula"] for r in rows]), ("earned in", [f"{r['rung']}. {r['rung_title']}" for r in rows])]
    widths = [max(len(h), *(len(c) for c in cells)) for h, cells in cols]
    lines = [d["title"]]
    heads = [h.rjust(w) if i == 1 else h.ljust(w) for i, ((h, _), w) in enumerate(zip(cols, widths))]
    lines.append(("  " + "  ".join(heads)).rstrip())
    for i in range(len(rows)):
        cells = [cols[0][1][i].ljust(widths[0]), cols[1][1][i].rjust(widths[1]),
                 cols[2][1][i].ljust(widths[2]), cols[3][1][i]]
        lines.append(("  " + "  ".join(cells)).rstrip())
    lines += [f"warning [{w['code']}]: {w['message']}" for w in d.get("warnings", [])]
    lines += _footer(d)
    return "\n".join(lines)


# -------------------------------------------------------------------------------- markdown
def _md(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _md_card_table(rows: list[dict]) -> list[str]:
    out = ["| number | value | formula | earned in |", "|---|---:|---|---|"]
    for r in rows:
        formula = f"`{_md(r['formula'])}`" if r["formula"] else ""
        out.append(f"| {_md(r['name'])} | {_md(r['value_text'])} | {formula} | {r['rung']}. {_md(r['rung_title'])} |")
    return out


def _md_assumptions(d: dict) -> list[str]:
    out: list[str] = []
    if d.get("warnings"):
        out += ["", "## Warnings", ""] + [f"- **{w['code']}**: {_md(w['message'])}" for w in d["warnings"]]
    if d.get("assumptions"):
        out += ["", "## Assumptions", "", "| input | value | basis | note |", "|---|---:|---|---|"]
        out += [f"| {a['name']} | {_md(_fmt(a['value'], a['unit']))} | {a['basis']} | {_md(a['note'])} |"
                for a in d["assumptions"]]
    return out


def journey_markdown(d: dict, card: dict | None = None) -> str:
    """A Markdown page: the rungs in order with figures and working, the meter, then the card."""
    out = [f"# {d['title']}", "", SUBTITLE, "", f"> {_md(d['prompt'])}"]
    for rung in d["rungs"]:
        out += ["", f"## {rung['n']}. {rung['title']} · {_meter(rung)}", "",
                "| figure | value | working |", "|---|---:|---|"]
        for k, v, w in _figure_rows(rung):
            out.append(f"| {k} | {_md(v)} | {'`' + _md(w) + '`' if w else ''} |")
        if rung["notes"]:
            out.append("")
            out += [f"- {_md(n)}" for n in rung["notes"]]
    out += ["", "## The meter", "", _md(_sum_line(d))]
    out += _md_assumptions(d)
    if card is not None:
        out += ["", f"## {card['title']}", ""] + _md_card_table(card["rows"])
    return "\n".join(out) + "\n"


def card_markdown(card: dict) -> str:
    out = [f"# {card['title']}", ""] + _md_card_table(card["rows"])
    out += _md_assumptions(card)
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------------ html
CSS = """
body{font:16px/1.5 system-ui,-apple-system,Segoe UI,sans-serif;max-width:64rem;margin:2rem auto;padding:0 1rem;color:#1b1f24}
h1{font-size:1.6rem;margin-bottom:.2rem} .sub{color:#57606a;margin-top:0}
blockquote{font-size:1.2rem;border-left:4px solid #4c78a8;margin:1rem 0;padding:.3rem 1rem;background:#f6f8fa}
section{border-top:1px solid #d0d7de;margin-top:1.6rem;padding-top:.4rem}
h2{display:flex;justify-content:space-between;align-items:baseline;font-size:1.25rem}
.meter{font:600 .95rem ui-monospace,Menlo,monospace;background:#1b1f24;color:#7ee787;padding:.15rem .6rem;border-radius:4px}
table{border-collapse:collapse;width:100%;font-size:.92rem} th,td{text-align:left;padding:.25rem .5rem;vertical-align:top}
tr:nth-child(even) td{background:#f6f8fa} td.v{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
code{font:.85rem ui-monospace,Menlo,monospace;color:#57606a} .note{color:#57606a;font-size:.92rem}
.warn{background:#fff8c5;border:1px solid #d4a72c;padding:.4rem .8rem;border-radius:4px;margin:.4rem 0}
.chart{margin:1rem 0;overflow-x:auto}
"""


def _e(text: Any) -> str:
    return _html.escape(str(text))


def _html_card_table(rows: list[dict]) -> str:
    parts = ["<table><tr><th>number</th><th>value</th><th>formula</th><th>earned in</th></tr>"]
    for r in rows:
        parts.append(f"<tr><td>{_e(r['name'])}</td><td class='v'>{_e(r['value_text'])}</td>"
                     f"<td><code>{_e(r['formula'])}</code></td><td>{r['rung']}. {_e(r['rung_title'])}</td></tr>")
    parts.append("</table>")
    return "".join(parts)


def _html_tail(d: dict) -> str:
    parts = []
    if d.get("assumptions"):
        parts.append("<section><h2>Assumptions</h2><table><tr><th>input</th><th>value</th><th>basis</th>"
                     "<th>note</th></tr>")
        parts += [f"<tr><td>{_e(a['name'])}</td><td class='v'>{_e(_fmt(a['value'], a['unit']))}</td>"
                  f"<td>{_e(a['basis'])}</td><td>{_e(a['note'])}</td></tr>" for a in d["assumptions"]]
        parts.append("</table></section>")
    return "".join(parts)


def _page(title: str, body: str) -> str:
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><meta name='viewport' "
            f"content='width=device-width,initial-scale=1'><title>{_e(title)}</title><style>{CSS}</style></head>"
            f"<body>{body}</body></html>\n")


def journey_html(d: dict, card: dict | None = None, chart_svg: str | None = None) -> str:
    """A self-contained page, readable start to finish: rungs, meter, warnings, card, assumptions."""
    parts = [f"<h1>{_e(d['title'])}</h1><p class='sub'>{_e(SUBTITLE)}</p>",
             f"<blockquote>{_e(d['prompt'])}</blockquote>"]
    parts += [f"<div class='warn'><b>{_e(w['code'])}</b>: {_e(w['message'])}</div>" for w in d.get("warnings", [])]
    for rung in d["rungs"]:
        parts.append(f"<section id='{_e(rung['key'])}'><h2><span>{rung['n']}. {_e(rung['title'])}</span>"
                     f"<span class='meter'>{_e(_meter(rung))}</span></h2>")
        parts.append("<table><tr><th>figure</th><th>value</th><th>working</th></tr>")
        for k, v, w in _figure_rows(rung):
            parts.append(f"<tr><td>{_e(k)}</td><td class='v'>{_e(v)}</td><td><code>{_e(w)}</code></td></tr>")
        parts.append("</table>")
        parts += [f"<p class='note'>{_e(n)}</p>" for n in rung["notes"]]
        parts.append("</section>")
    parts.append(f"<section><h2>The meter</h2><p><code>{_e(_sum_line(d))}</code></p>")
    if chart_svg:
        parts.append(f"<div class='chart'>{chart_svg}</div>")
    parts.append("</section>")
    if card is not None:
        parts.append(f"<section><h2>{_e(card['title'])}</h2>{_html_card_table(card['rows'])}</section>")
    parts.append(_html_tail(d))
    return _page(d["title"], "".join(parts))


def card_html(card: dict) -> str:
    parts = [f"<h1>{_e(card['title'])}</h1>"]
    parts += [f"<div class='warn'><b>{_e(w['code'])}</b>: {_e(w['message'])}</div>" for w in card.get("warnings", [])]
    parts.append(_html_card_table(card["rows"]))
    parts.append(_html_tail(card))
    return _page(card["title"], "".join(parts))


# ------------------------------------------------------------------------------------ rich
def print_journey_rich(d: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"[bold]{_e_rich(d['title'])}[/bold]")
    console.print(f'[italic]"{_e_rich(quote(d["prompt"]))}"[/italic]', highlight=False)
    for rung in d["rungs"]:
        t = Table(title=f"{rung['n']}. {rung['title']}", title_justify="left", caption=_meter(rung),
                  caption_justify="right", show_header=False, expand=False)
        t.add_column("figure", style="bold")
        t.add_column("value", justify="right")
        t.add_column("working", style="dim", overflow="fold")
        for k, v, w in _figure_rows(rung):
            t.add_row(k, v, w)
        console.print(t)
        for n in rung["notes"]:
            console.print(f"[dim]note: {_e_rich(n)}[/dim]", highlight=False)
    console.print(f"[bold green]{_e_rich(_sum_line(d))}[/bold green]", highlight=False)
    _rich_tail(console, d)


def print_card_rich(d: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    t = Table(title=d["title"], title_justify="left")
    t.add_column("number", style="bold")
    t.add_column("value", justify="right")
    t.add_column("formula", style="dim", overflow="fold")
    t.add_column("earned in")
    for r in d["rows"]:
        t.add_row(r["name"], r["value_text"], r["formula"], f"{r['rung']}. {r['rung_title']}")
    console.print(t)
    _rich_tail(console, d)


def _e_rich(text: Any) -> str:
    from rich.markup import escape

    return escape(str(text))


def _rich_tail(console: Any, d: dict) -> None:
    for w in d.get("warnings", []):
        console.print(f"[yellow]warning {_e_rich('[' + w['code'] + ']')}[/yellow]: {_e_rich(w['message'])}",
                      highlight=False)
    for line in _footer(d):
        console.print(f"[dim]{_e_rich(line)}[/dim]", highlight=False)
