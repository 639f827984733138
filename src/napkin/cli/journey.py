"""`napkin journey`, `napkin card` and `napkin tokens`: one prompt end to end, its card, token counts."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from napkin.cli.common import calculator_command
from napkin.errors import InputError, quote


def _write_all(outputs: list[tuple[str, str, Any]]) -> None:
    """Write each (option, path, content) named; every path is checked first, so when one cannot be written
    (a folder, a FIFO, a missing folder) none is, and the error is the only line."""
    from napkin.files import check_writable, write_file

    todo = [(field, path, make) for field, path, make in outputs if path]
    for field, path, _ in todo:
        check_writable(path, field)
    for field, path, make in todo:
        write_file(path, field, make())
        click.echo(f"wrote {quote(path)}", err=True)


def _chart_bytes(spec: dict, path: str, field: str) -> bytes | str:
    """SVG or PNG of a Vega-Lite spec, by the file's extension (PNG at twice the size)."""
    from napkin.charts import chart_bytes

    return chart_bytes(spec, path, field, scale=2)


def _svg_or_none(spec: dict) -> str | None:
    try:
        import vl_convert as vlc
    except ImportError:
        return None
    return vlc.vegalite_to_svg(spec)


def _print(text_fn: Any, rich_fn: Any, d: dict) -> None:
    if sys.stdout.isatty():
        rich_fn(d)
    else:
        click.echo(text_fn(d))


# --------------------------------------------------------------------------------- journey
def _after_journey(report: Any, req: Any, params: dict) -> Any:
    from napkin import render_doc
    from napkin.calculators.card import build_card
    from napkin.charts.journey import ladder_spec

    if params.get("chart") and Path(params["chart"]).suffix.lower() not in (".svg", ".png"):
        raise InputError("chart", params["chart"], "must end in .svg or .png")
    d = render_doc.data(report)
    card = None
    if params.get("html_out") or params.get("markdown_out"):
        card = render_doc.data(build_card(report))
    _write_all([("html", params.get("html_out"),
                 lambda: render_doc.journey_html(d, card, _svg_or_none(ladder_spec(report)))),
                ("markdown", params.get("markdown_out"), lambda: render_doc.journey_markdown(d, card)),
                ("chart", params.get("chart"), lambda: _chart_bytes(ladder_spec(report), params["chart"], "chart"))])
    if params.get("as_json"):
        return None
    _print(render_doc.journey_text, render_doc.print_journey_rich, d)
    if params.get("explain") or params.get("cite"):
        click.echo("")
        click.echo(report.explain(cite=True) if params.get("cite") else report.explain())
    return False


_DOC_OPTIONS = [
    click.Option(["--html", "html_out"], metavar="FILE.html", help="Write a page to read start to finish."),
    click.Option(["--markdown", "markdown_out"], metavar="FILE.md", help="Write the same page as Markdown."),
]

journey = calculator_command(
    "journey",
    extra=_DOC_OPTIONS + [click.Option(["--chart"], metavar="FILE.svg|png",
                                       help="Write the FLOPs ladder, one MAC to the training run.")],
    after=_after_journey,
    help="One prompt through a model, rung by rung (tokens, weights, memory wall, prefill, decode, bill, "
         "training debt), with a running FLOPs meter.",
)


# ------------------------------------------------------------------------------------ card
def _after_card(report: Any, req: Any, params: dict) -> Any:
    from napkin import render_doc
    from napkin.charts.journey import card_spec

    if params.get("png") and Path(params["png"]).suffix.lower() != ".png":
        raise InputError("png", params["png"], "must end in .png")
    d = render_doc.data(report)
    _write_all([("html", params.get("html_out"), lambda: render_doc.card_html(d)),
                ("markdown", params.get("markdown_out"), lambda: render_doc.card_markdown(d)),
                ("png", params.get("png"),
                 lambda: _chart_bytes(card_spec(d["rows"], d["title"]), params["png"], "png"))])
    if params.get("as_json"):
        return None
    _print(render_doc.card_text, render_doc.print_card_rich, d)
    if params.get("explain") or params.get("cite"):
        click.echo("")
        click.echo(report.explain(cite=True) if params.get("cite") else report.explain())
    return False


card = calculator_command(
    "card",
    extra=[click.Option(["--markdown", "markdown_out"], metavar="FILE.md", help="Write the card as Markdown."),
           click.Option(["--html", "html_out"], metavar="FILE.html", help="Write the card as an HTML page."),
           click.Option(["--png"], metavar="FILE.png", help="Write the card as a picture.")],
    after=_after_card,
    help="The numbers every AI engineer should know, computed for a model and accelerator, each with its "
         "formula and the journey rung where it was earned.",
)


# ---------------------------------------------------------------------------------- tokens
def tokens_table(d: dict) -> str:
    """The comparison table of several files, plain text."""
    head = ["file", "tokens", "characters", "words", "chars/token", "words/token", "× first"]
    rows = []
    for f in d["files"]:
        rows.append([f["name"], f"{f['tokens']:,}", f"{f['characters']:,}", f"{f['words']:,}",
                     _num(f["characters_per_token"]), _num(f["words_per_token"]),
                     _num(f["tokens_over_first"]) + "×" if f["tokens_over_first"] is not None else "-"])
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    out = [f"Tokens ({d['encoding']}), same meaning in {len(rows)} files"]
    out.append("  " + "  ".join(h.ljust(widths[0]) if i == 0 else h.rjust(widths[i]) for i, h in enumerate(head)))
    for r in rows:
        out.append("  " + "  ".join(c.ljust(widths[0]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)))
    for w in d.get("warnings", []):
        out.append(f"warning [{w['code']}]: {w['message']}")
    out += [f"note: {n}" for n in d.get("notes", [])]
    return "\n".join(out)


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.2f}"


IMAGE_COLUMNS = [("image", "image", None), ("width_px", "width px", "count"), ("height_px", "height px", "count"),
                 ("openai_tokens", "OpenAI", "count"), ("anthropic_tokens", "Anthropic", "count"),
                 ("gemini_tokens", "Gemini", "count")]


def shown_pieces(pieces: list[str]) -> str:
    """The pieces of a text between bars, as they split it (``|st|raw|berry|``); a space stays a space,
    a line end or tab is written \\n or \\t, and a bar inside a piece \\|."""
    esc = [p.replace("|", "\\|").replace("\n", "\\n").replace("\t", "\\t")
           .replace("\r", "\\r") for p in pieces]
    return "|" + "|".join(esc) + "|"


def _tokens_read(raw: dict, params: dict) -> dict:
    """TEXT that names an existing file is that file (said in a note); ``-`` is standard input."""
    from napkin.calculators.tokens import MAX_TEXT_BYTES

    text = params.get("text")
    if text is None or raw.get("text") != text:
        return raw
    if text == "-":
        data = sys.stdin.buffer.read(MAX_TEXT_BYTES + 1)
        if len(data) > MAX_TEXT_BYTES:
            from napkin.errors import InputError

            raise InputError("text", "-", f"is more than napkin reads from standard input "
                             f"({MAX_TEXT_BYTES // 2**20} MiB)", "give a file with --file")
        try:
            raw["text"] = data.decode("utf-8")
        except UnicodeDecodeError:
            from napkin.errors import InputError

            raise InputError("text", "-", "is not UTF-8 text", "convert it, e.g. iconv -t utf-8") from None
        params["read_note"] = "read the text from standard input (-); leading and trailing spaces and line ends dropped"
        return raw
    from pathlib import Path

    try:
        is_file = Path(text).is_file()
    except (OSError, ValueError):  # a text too long to be a path, or with a NUL in it
        is_file = False
    if is_file:
        raw.pop("text")
        raw["file"] = [text, *(raw.get("file") or [])]
        params["read_note"] = (f"{text!r} names a file, so its contents were counted; give --text {text!r} to "
                               "count the words themselves")
    return raw


def _after_tokens(report: Any, req: Any, params: dict) -> Any:
    if params.get("read_note"):
        report.note(params["read_note"])
    if params.get("as_json") or params.get("explain") or params.get("cite"):
        return None
    if "pieces" in report.results:
        report.results["pieces"] = shown_pieces(report.results["pieces"])
    if "images" in report.results:
        from napkin.cli.serve import print_with_tables

        print_with_tables(report, as_json=False, explain=False,
                          tables=[("images", "input tokens per image, at each provider's formula:", IMAGE_COLUMNS)])
        return False
    if "files" not in report.results:
        return None
    d = {**report.to_dict(), "title": report.title}
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.table import Table

        t = Table(title=f"Tokens ({d['encoding']})", title_justify="left")
        for h in ("file", "tokens", "characters", "words", "chars/token", "words/token", "× first"):
            t.add_column(h, justify="left" if h == "file" else "right")
        for f in d["files"]:
            t.add_row(f["name"], f"{f['tokens']:,}", f"{f['characters']:,}", f"{f['words']:,}",
                      _num(f["characters_per_token"]), _num(f["words_per_token"]), _num(f["tokens_over_first"]) + "×")
        Console().print(t)
        for n in d.get("notes", []):
            click.echo(f"note: {n}")
    else:
        click.echo(tokens_table(d))
    return False


tokens = calculator_command(
    "tokens",
    after=_after_tokens,
    prepare=_tokens_read,
    help="Count tokens in TEXT or --file F (o200k or cl100k, offline; or the 4-characters rule). "
         "TEXT that names an existing file counts that file; - reads standard input. Several --file give a "
         "comparison table; --show prints the pieces; --image and --image-size give an image's input tokens.",
)
