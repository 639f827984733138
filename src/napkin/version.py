"""napkin's version: one line, read by the package, the CLI, the web API and the build."""

__version__ = "0.1.0"
