"""README.md is generated from docs/index.md, the documentation site's home page: `make readme`.

The one change: links between pages of the site (``serve.md#napkin-validate``) become links into
``docs/`` (``docs/serve.md#napkin-validate``), so that they work where README.md is read (a
repository browser, PyPI). Run from anywhere: ``python docs/readme.py`` writes README.md at the root.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "docs" / "index.md"
TARGET = ROOT / "README.md"
HEADER = "<!-- Generated from docs/index.md by `make readme`: edit that file, not this one. -->\n"

# a markdown link to a page of the site: ](page.md) or ](dir/page.md#anchor), never one with a scheme
SITE_LINK = re.compile(r"\]\((?![a-z][a-z0-9+.-]*:|/|#)([^)\s]+\.md(?:#[^)\s]*)?)\)")


def readme(index: str) -> str:
    """The README's text from the home page's."""
    return HEADER + SITE_LINK.sub(lambda m: f"](docs/{m.group(1)})", index)


def main() -> int:
    TARGET.write_text(readme(SOURCE.read_text()))
    print(f"wrote {TARGET.relative_to(ROOT)} from {SOURCE.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
