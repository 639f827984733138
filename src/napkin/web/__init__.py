"""The local web calculator: a Starlette JSON API over the calculators and one static page."""
