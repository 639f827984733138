"""Output, help and the README speak to users: real sources and reasoning, units in defaults, no rounding noise."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from napkin import units

ROOT = Path(__file__).resolve().parents[1]
# the simulation's random --seed (and code that seeds a generator) is a seed in the other sense
RANDOM = re.compile(r"--seed|\bseed=|req\.seed|\.seed\b|manual_seed|seeded|seed of the simulated|seed \"$|"
                    r"\bseed: int|seed\)")
# the journey's notes and README section are reworded by their owner (the journey + bill work of issue 16);
# its help (journey/request.py) is checked here
OWNED_ELSEWHERE = ("src/napkin/calculators/journey/__init__.py", "src/napkin/calculators/journey/tokens.py",
                   "src/napkin/calculators/journey/memory_wall.py", "src/napkin/calculators/journey/decode.py",
                   "docs/readme/70-journey.md")


def test_no_internal_documents_named_where_users_read():
    """Users read output, help, --cite sources, catalog notes and the README; none names "the seed" or
    "seed 001": each names the paper, datasheet or reasoning instead."""
    found = []
    for path in [*ROOT.glob("src/napkin/**/*.py"), *ROOT.glob("src/napkin/**/*.toml"), *ROOT.glob("docs/readme/*.md")]:
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(OWNED_ELSEWHERE):
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\bseeds?\b", line, re.I) and not RANDOM.search(line):
                found.append(f"{rel}:{n}: {line.strip()}")
    assert found == []


def test_help_prints_defaults_in_units(run_cli):
    """A default is printed as a reader types it: 10 GB/s, 80%, $3/h; never a raw float."""
    journey = run_cli("journey", "--help").stdout
    assert "(default 10 GB/s)" in journey and "10000000000.0" not in journey
    assert "(default $3/h)" in journey
    memory = run_cli("memory", "--help").stdout
    assert "(default 80%)" in memory and "(default 0.8)" not in memory
    for command in ("train", "serve", "memory", "check", "journey", "mfu", "tokens", "compare"):
        text = run_cli(command, "--help").stdout
        assert not re.search(r"\(default -?\d+\.\d*e?\d*\)", " ".join(text.split())), command


def test_a_zero_swing_prints_zero():
    """Tokens move cost and tokens together: $/M does not change, and the tornado says $0/M, not $5.551e-17/M."""
    import napkin
    from napkin.calculators.train.sensitivity import sensitivity_text

    r = napkin.train(params=7e9, tokens=2e12, sensitivity=True, price=2.0)
    tokens = next(x for x in r["sensitivity"] if x["input"] == "tokens")
    assert tokens["swing_usd_per_million"] == 0.0
    assert "tokens   1.6T .. 2.4T                    $0.0655/M .. $0.0655/M    $0/M" in sensitivity_text(r["sensitivity"])


@pytest.mark.parametrize("text, value", [("13b", 13e9), ("3t", 3e12), ("4m", 4e6), ("70g", 70e9), ("2p", 2e15),
                                         ("15tokens", 15.0), ("15t tokens", 15e12), ("7b params", 7e9)])
def test_lowercase_counts(text, value):
    assert units.parse(text, "count", "tokens") == value


def test_lowercase_counts_on_the_command_line(run_cli):
    import json

    r = json.loads(run_cli("train", "--params", "13b", "--tokens", "3t", "--price", "2/h", "--json").stdout)
    assert (r["params"], r["advanced_tokens"]) == (13e9, 3e12)


@pytest.mark.parametrize("value, text", [(1.00435, "100.4%"), (0.99996, "99.996%"), (1.0, "100%"), (0.4, "40%"),
                                         (2.61, "261%"), (1.0004, "100.04%")])
def test_a_fraction_near_one_is_told_from_one(value, text):
    assert units.format(value, "fraction") == text
