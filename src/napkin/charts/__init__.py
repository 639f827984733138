"""Vega-Lite chart specs, one module per feature; rendered by vl-convert for --chart and by the page."""

from __future__ import annotations

from pathlib import Path

from napkin.errors import InputError


def write_chart(spec: dict, path: str) -> str:
    """Render a spec to ``path`` (.svg or .png) with vl-convert; returns the path."""
    suffix = Path(path).suffix.lower()
    if suffix not in (".svg", ".png"):
        raise InputError("chart", path, "must end in .svg or .png")
    import vl_convert as vlc

    if suffix == ".svg":
        Path(path).write_text(vlc.vegalite_to_svg(spec))
    else:
        Path(path).write_bytes(vlc.vegalite_to_png(spec))
    return path
