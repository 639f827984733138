"""Vega-Lite chart specs, one module per feature; rendered by vl-convert for --chart and by the page."""
