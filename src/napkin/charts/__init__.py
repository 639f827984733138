"""Vega-Lite chart specs, one module per feature; rendered by vl-convert for --chart and by the page."""

from __future__ import annotations

from pathlib import Path

from napkin.errors import InputError

SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"  # the Vega-Lite of vl-convert and of the page's bundle


def chart_bytes(spec: dict, path: str, field: str = "chart", *, scale: float = 1.0) -> bytes | str:
    """SVG text or PNG bytes of a Vega-Lite spec, by ``path``'s extension (.svg or .png).

    Needs the charts extra (vl-convert-python); without it, one line naming the extra.
    """
    suffix = Path(path).suffix.lower()
    if suffix not in (".svg", ".png"):
        raise InputError(field, path, "must end in .svg or .png")
    try:
        import vl_convert as vlc
    except ImportError:
        raise InputError(field, path, "needs vl-convert-python to draw", "pip install 'llm-napkin[charts]'") from None
    if suffix == ".svg":
        return vlc.vegalite_to_svg(spec)
    return vlc.vegalite_to_png(spec, scale=scale) if scale != 1.0 else vlc.vegalite_to_png(spec)


def write_chart(spec: dict, path: str, field: str = "chart", *, scale: float = 1.0) -> str:
    """Render a spec to ``path`` (.svg or .png) with vl-convert; returns the path."""
    from napkin.files import write_file

    data = chart_bytes(spec, path, field, scale=scale)
    write_file(path, field, data)
    return path
