"""`napkin tokens` on a run of one kind of character (found by the CLI fuzz: a 1 MiB line of 'x' never
finished, since byte-pair encoding a piece takes time that grows with the square of its length)."""

from __future__ import annotations

import math

import pytest

from napkin import calculate
from napkin.errors import InputError
from napkin.token_count import LONG_RUN, count


@pytest.mark.parametrize("run,head,tail", [("x" * 2**20, "Hello 1", "2 end"), ("=" * 50_000, "Hello a", "b end"),
                                           (" " * 20_000, "Hello a", "b end"), ("_" * 5_000, "Hello a", "b end")])
def test_a_long_run_is_counted_by_the_rule_and_the_rest_exactly(run, head, tail):
    tc = count(head + run + tail, "o200k")
    assert tc.ruled_characters == len(run) and not tc.exact
    assert tc.tokens == count(head, "o200k").tokens + math.ceil(len(run) / 4) + count(tail, "o200k").tokens


def test_runs_below_the_bound_stay_exact():
    text = "a" * (LONG_RUN - 1) + " b" + "-" * (LONG_RUN - 1)
    tc = count(text, "cl100k")
    assert tc.exact and tc.ruled_characters == 0


def test_the_report_says_which_characters_were_estimated(tmp_path):
    path = tmp_path / "long.txt"
    path.write_text("Hello. " + "x" * 300_000 + "\n")
    r = calculate("tokens", file=str(path))
    assert r["exact"] is False
    w = next(w for w in r.warnings if w.code == "token-long-run")
    assert w.message.startswith("300,000 characters stand in runs of 1,000 or more of one kind")
    assert not any(w.code == "token-estimate" for w in r.warnings)  # the encoder is installed


def test_show_refuses_a_run_it_cannot_split_in_one_line():
    with pytest.raises(InputError) as e:
        calculate("tokens", text="y" * 5_000, show=True)
    assert e.value.field == "show" and "5,000 characters of one kind" in e.value.problem


def test_json_escapes_the_characters_a_terminal_takes_for_a_line_break(run_cli):
    """Found by the CLI fuzz (`tokens --show --json` of a text holding DEL): JSON may carry U+2028, U+2029
    and DEL raw, but a terminal or a JavaScript parser reads them as a break or hides them."""
    import json

    from napkin.derivation import Report

    out = run_cli("tokens", "a\x7fb", "--show", "--json").stdout
    assert "\x7f" not in out and "\\u007f" in out
    assert "".join(json.loads(out)["pieces"]) == "a\x7fb"
    r = Report("t")
    r.note("one\u2028two\u2029three\x7f")
    text = r.to_json()
    assert not {"\u2028", "\u2029", "\x7f"} & set(text)
    assert json.loads(text)["notes"] == ["one\u2028two\u2029three\x7f"]
