"""napkin.units: parsing what people type, formatting what they read."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from napkin import units
from napkin.errors import InputError

PARSED = [
    # counts
    ("7B", "count", 7e9), ("70.6e9", "count", 70.6e9), ("15T", "count", 15e12), ("4M", "count", 4e6),
    ("4Mi", "count", 4 * 2**20), ("16,384", "count", 16384), ("8k", "count", 8000), ("128Ki", "count", 131072),
    ("15T tokens", "count", 15e12), ("1.5 B", "count", 1.5e9),
    # bytes: decimal and binary kept apart
    ("80GB", "bytes", 80e9), ("80GiB", "bytes", 80 * 2**30), ("141 GB", "bytes", 141e9),
    ("512 KiB", "bytes", 512 * 1024), ("1TB", "bytes", 1e12), ("400Gbit", "bytes", 50e9), ("123B", "bytes", 123.0), ("85899345920", "bytes", 85899345920.0),
    # work and rates
    ("989 TFLOP/s", "flops_per_s", 989e12), ("989T", "flops_per_s", 989e12), ("1.979e15", "flops_per_s", 1.979e15),
    ("989 TFLOPS", "flops_per_s", 989e12), ("810 TFLOP", "flops", 810e12), ("3.8e25 FLOP", "flops", 3.8e25),
    ("3.35TB/s", "bytes_per_s", 3.35e12), ("900 GB/s", "bytes_per_s", 900e9), ("400Gbit/s", "bytes_per_s", 50e9),
    ("400Gbps", "bytes_per_s", 50e9), ("3.35T", "bytes_per_s", 3.35e12),
    # durations
    ("2.07s", "seconds", 2.07), ("9.3ms", "seconds", 9.3e-3), ("54d", "seconds", 54 * 86400.0),
    ("3w", "seconds", 21 * 86400.0), ("50000h", "seconds", 50000 * 3600.0), ("15 min", "seconds", 900.0),
    ("250us", "seconds", 250e-6), ("2y", "seconds", 2 * 365 * 86400.0),
    # money
    ("$2.50/h", "usd_per_hour", 2.5), ("2/h", "usd_per_hour", 2.0), ("2.5", "usd_per_hour", 2.5),
    ("$2.50/gpu-hour", "usd_per_hour", 2.5), ("$5.576M", "usd", 5.576e6), ("500k", "usd", 5e5),
    ("$60,000", "usd", 6e4), ("$3/M", "usd_per_million", 3.0), ("0.08/kWh", "usd_per_kwh", 0.08),
    # fractions, power, rates
    ("40%", "fraction", 0.4), ("0.4", "fraction", 0.4), ("700W", "watts", 700.0), ("1.2kW", "watts", 1200.0),
    ("10/s", "per_s", 10.0), ("600/min", "per_s", 10.0),
]


@pytest.mark.parametrize("text,kind,expected", PARSED)
def test_parse(text, kind, expected):
    assert units.parse(text, kind) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("text,kind,message", [
    ("80Gb", "bytes", "value is ambiguous: 'Gb' could be bits or bytes; got 80Gb (write GB for bytes or Gbit for bits)"),
    ("400Gb/s", "bytes_per_s", "value is ambiguous: 'Gb' could be bits or bytes; got 400Gb/s (write GB for bytes or Gbit for bits)"),
    ("80GB", "seconds", "value: expected a duration such as 2.07s, 9.3ms, 54d or 3w; got 80GB"),
    ("3w", "bytes", "value is a duration; expected a size such as 80GB, 80GiB or 141 GB; got 3w"),
    ("80G", "bytes", "value has a prefix but no unit; got 80G (write GB for decimal bytes or GiB for binary)"),
    ("80GB", "count", "value is a size in bytes; expected a count such as 7B, 70.6e9, 15T, 4M or 4Mi; got 80GB"),
    ("$5", "count", "value is money; expected a count such as 7B, 70.6e9, 15T, 4M or 4Mi; got $5"),
    ("5m", "seconds", "value is ambiguous: m could be minutes or months; got 5m (write min for minutes)"),
    ("989 TFLOP/s", "flops", "value is a rate; expected an amount of work such as 6.3e24, 810 TFLOP or 3.8e25 FLOP; got 989 TFLOP/s"),
    # and the reverse: an amount where a rate is asked for (found in review: it was read as 989 TFLOP/s)
    ("989 TFLOP", "flops_per_s", "value is an amount of work; expected a rate such as 989 TFLOP/s, 989T or 1.979e15; got 989 TFLOP"),
    ("seven", "count", "value is not a count such as 7B, 70.6e9, 15T, 4M or 4Mi; got seven"),
    ("2.50/day", "usd_per_hour", "value is not per hour; expected an hourly price such as $2.50/h or 2.5; got 2.50/day"),
])
def test_parse_errors_say_what_was_expected(text, kind, message):
    with pytest.raises(InputError) as exc:
        units.parse(text, kind)
    assert str(exc.value) == message


def test_error_names_the_field():
    with pytest.raises(InputError, match=r"^memory is ambiguous"):
        units.parse("80Gb", "bytes", field="memory")


@pytest.mark.parametrize("value,kind,text", [
    (141.2e9, "bytes", "141.2 GB"), (80 * 2**30, "bytes", "85.9 GB"), (70.6e9, "count", "70.6B"),
    (16384, "count", "16,384"), (15e12, "count", "15T"), (989.5e12, "flops_per_s", "989.5 TFLOP/s"),
    (6.3e24, "flops", "6.3e24 FLOP"), (810e12, "flops", "810 TFLOP"), (3.35e12, "bytes_per_s", "3.35 TB/s"),
    (972000.0, "seconds", "11.25 d"), (0.0151, "seconds", "15.1 ms"), (2.07, "seconds", "2.07 s"),
    (163840.0, "usd", "$163,840"), (0.0075, "usd", "$0.0075"), (5.576e6, "usd", "$5.576M"),
    (2.5, "usd_per_hour", "$2.50/h"), (0.401, "fraction", "40.1%"),
])
def test_format(value, kind, text):
    assert units.format(value, kind) == text


def test_binary_bytes_stay_binary():
    assert units.format(80 * 2**30, "bytes", binary=True) == "80 GiB"
    assert units.format(80e9, "bytes") == "80 GB"
    assert units.format(80e9, "bytes", binary=True) == "74.51 GiB"


# Four significant figures: the relative error of a round trip is at most 5e-4 (fractions
# show three, as percentages: 5e-3). Every kind, far outside any quantity napkin computes:
# out of a kind's readable range the text falls back to scientific notation, which parses back.
ROUND_TRIP_KINDS = ["count", "bytes", "flops", "flops_per_s", "bytes_per_s", "seconds", "usd",
                    "usd_per_hour", "usd_per_million", "usd_per_kwh", "watts", "per_s", "joules",
                    "number", "fraction"]
assert sorted(ROUND_TRIP_KINDS) == sorted(units.KINDS)
WIDE = st.floats(min_value=1e-30, max_value=1e30, allow_nan=False, allow_infinity=False)


@settings(max_examples=600, deadline=None)
@given(kind=st.sampled_from(ROUND_TRIP_KINDS), x=WIDE, sign=st.sampled_from([1.0, -1.0]))
def test_round_trip(kind, x, sign):
    text = units.format(sign * x, kind)
    back = units.parse(text, kind)
    assert math.isclose(back, sign * x, rel_tol=5e-3 if kind == "fraction" else 5e-4), (x, text, back)


@settings(max_examples=150, deadline=None)
@given(x=WIDE)
def test_round_trip_binary_bytes(x):
    assert math.isclose(units.parse(units.format(x, "bytes", binary=True), "bytes"), x, rel_tol=5e-4)


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(ROUND_TRIP_KINDS),
       x=st.floats(min_value=5e-324, max_value=1.7e308, allow_nan=False, allow_infinity=False))
def test_every_value_formats_compactly(kind, x):
    """No kind writes out hundreds of digits: 1e300 bytes is "1e300 B", not 1 and 280 zeros EB."""
    assert len(units.format(x, kind)) <= 17, units.format(x, kind)


@pytest.mark.parametrize("value,kind,text", [
    # beyond the largest prefix, or the readable digits, each kind writes its base unit in e-notation
    (1e300, "bytes", "1e300 B"), (8e40, "bytes", "8e40 B"), (1.5e21, "bytes", "1.5e21 B"),
    (1.5e21, "bytes_per_s", "1.5e21 B/s"), (1e30, "count", "1e30"), (2.5e30, "watts", "2.5e30 W"),
    (1e30, "flops_per_s", "1e30 FLOP/s"), (1e20, "usd", "$1e20"), (1e20, "usd_per_hour", "$1e20/h"),
    (1e30, "joules", "1e30 J"), (1e30, "seconds", "1e30 s"), (1e30, "per_s", "1e30/s"),
    # below the smallest readable figure
    (1e-300, "fraction", "1e-300"), (2.358e-22, "seconds", "2.358e-22 s"), (3e-7, "bytes", "3e-7 B"),
    (1.25e-9, "usd_per_million", "$1.25e-9/M"), (1e-30, "count", "1e-30"), (-1e-30, "flops", "-1e-30 FLOP"),
    (4e-8, "usd_per_kwh", "$4e-8/kWh"), (1e-7, "usd", "$1e-7"), (1e-7, "watts", "1e-7 W"),
    (5e7, "fraction", "5e7"),
    # inside the readable range nothing changed
    (0.5, "bytes", "0.5 B"), (80e18, "bytes", "80 EB"), (1e-5, "fraction", "0.001%"),
    (999e12, "usd", "$999T"), (0.0001, "usd", "$0.0001"), (2.07e-15, "seconds", "2.07 fs"),
    (3.6e-5, "usd", "$0.000036"),  # 12 input tokens at $3/M: a real line of `napkin bill`
])
def test_format_falls_back_to_scientific(value, kind, text):
    assert units.format(value, kind) == text
    assert math.isclose(units.parse(text, kind), value, rel_tol=5e-4)


# ------------------------------------------------------------------ commas and words
@pytest.mark.parametrize("text,kind,expected", [
    ("16,384", "count", 16384.0), ("1,234.5", "count", 1234.5), ("1,000,000", "count", 1e6),
    ("-1,234", "number", -1234.0), ("$1,500,000", "usd", 1.5e6), ("1,500B", "count", 1.5e12),
    ("1,024 GiB", "bytes", 1024 * 2**30), ("1_000_000", "count", 1e6), ("$2,950.50/h", "usd_per_hour", 2950.5),
])
def test_commas_as_thousands_groups(text, kind, expected):
    assert units.parse(text, kind) == expected


@pytest.mark.parametrize("text,kind,message", [
    # a decimal comma used to be stripped: 1,5B read as 15B, 2,50 as $250/h, 12,34 as 1,234
    ("1,5B", "count", "params has a comma that is not a thousands separator; got 1,5B "
                      "(write 1.5B for a decimal; commas may only separate thousands, as in 1,500)"),
    ("2,50", "usd_per_hour", "params has a comma that is not a thousands separator; got 2,50 "
                             "(write 2.50 for a decimal; commas may only separate thousands, as in 1,500)"),
    ("$2,50/h", "usd_per_hour", "params has a comma that is not a thousands separator; got $2,50/h "
                                "(write $2.50/h for a decimal; commas may only separate thousands, as in 1,500)"),
    ("12,34", "count", "params has a comma that is not a thousands separator; got 12,34 "
                       "(write 12.34 for a decimal; commas may only separate thousands, as in 1,500)"),
    ("1,,,2", "count", "params has a comma that is not a thousands separator; got 1,,,2 "
                       "(commas may only separate thousands, as in 1,500; write a point for a decimal)"),
    ("5,", "count", "params has a comma that is not a thousands separator; got 5, "
                    "(commas may only separate thousands, as in 1,500; write a point for a decimal)"),
    ("1,234,5", "count", "params has a comma that is not a thousands separator; got 1,234,5 "
                         "(commas may only separate thousands, as in 1,500; write a point for a decimal)"),
    ("1234,567", "count", "params has a comma that is not a thousands separator; got 1234,567 "
                          "(write 1234.567 for a decimal; commas may only separate thousands, as in 1,500)"),
    ("1.5,000", "count", "params has a comma that is not a thousands separator; got 1.5,000 "
                         "(commas may only separate thousands, as in 1,500; write a point for a decimal)"),
])
def test_misplaced_commas_are_refused(text, kind, message):
    with pytest.raises(InputError) as exc:
        units.parse(text, kind, "params")
    assert str(exc.value) == message


@pytest.mark.parametrize("text,expected", [
    ("15T tokens", 15e12), ("15Ttokens", 15e12), ("15 tokens", 15.0), ("15 Tokens", 15.0), ("15tokens", 15.0),
    ("15tok", 15.0), ("4M tok", 4e6), ("7Bparams", 7e9), ("7B parameters", 7e9), ("8 GPUs", 8.0),
    ("100 requests", 100.0), ("100Requests", 100.0),
])
def test_count_words_are_stripped_whole(text, expected):
    assert units.parse(text, "count") == expected


@pytest.mark.parametrize("text,message", [
    # "15Tokens" used to read 15: the case-blind strip of "tokens" ate the T the user may have meant
    ("15Tokens", "tokens is ambiguous: the T of 'Tokens' could be the prefix T; got 15Tokens "
                 "(write 15 tokens for 15, or 15T tokens for 15T)"),
    ("15Tok", "tokens is ambiguous: the T of 'Tok' could be the prefix T; got 15Tok "
              "(write 15 tok for 15, or 15T tok for 15T)"),
    ("7Params", "tokens is ambiguous: the P of 'Params' could be the prefix P; got 7Params "
                "(write 7 params for 7, or 7P params for 7P)"),
])
def test_glued_capital_word_is_ambiguous(text, message):
    with pytest.raises(InputError) as exc:
        units.parse(text, "count", "tokens")
    assert str(exc.value) == message


def test_a_tiny_flop_rate_is_short():
    """Found by hypothesis on CI: 5.68e-6 FLOP/s printed as '0.000005682 FLOP/s' (18 characters)."""
    assert units.format(5.682230977507042e-06, "flops_per_s") == "5.682e-6 FLOP/s"
    assert units.parse("5.682e-6 FLOP/s", "flops_per_s") == 5.682e-6
    assert units.format(0.0015, "flops_per_s") == "0.0015 FLOP/s"


def test_a_small_bare_size_is_refused_not_read_as_bytes():
    """`--memory 80` was 80 bytes (fits no, 175,000,000 GPUs needed): a size under 1 MiB with no unit is refused;
    a number (the JSON API's base units) and a big bare figure still read as bytes."""
    with pytest.raises(InputError, match=r"memory has no unit \(read bare, it is bytes\); got 80 \(write 80GB"):
        units.parse("80", "bytes", "memory")
    assert units.parse(80, "bytes") == 80.0 and units.parse("80B", "bytes") == 80.0
