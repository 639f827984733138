"""Units at the command line: thousands groups, decimal commas, glued words, percent hints,
and extreme values, end to end through the CLI (exact plain-text output)."""

from __future__ import annotations

import re

import pytest

COMMA = "has a comma that is not a thousands separator"
ONLY_THOUSANDS = "commas may only separate thousands, as in 1,500"


@pytest.mark.parametrize("args,line", [
    # each of these used to run: 1,5B as 15B, 2,50 as $250/h, 12,34 as 1,234 tokens, 15Tokens as 15
    (("memory", "--params", "1,5B"), f"error: params {COMMA}; got 1,5B (write 1.5B for a decimal; {ONLY_THOUSANDS})"),
    (("train", "--params", "7B", "--tokens", "2T", "--gpu", "h100", "--price", "2,50"),
     f"error: price {COMMA}; got 2,50 (write 2.50 for a decimal; {ONLY_THOUSANDS})"),
    (("train", "--params", "7B", "--tokens", "12,34", "--gpu", "h100"),
     f"error: tokens {COMMA}; got 12,34 (write 12.34 for a decimal; {ONLY_THOUSANDS})"),
    (("train", "--params", "7B", "--tokens", "15Tokens", "--gpu", "h100"),
     "error: tokens is ambiguous: the T of 'Tokens' could be the prefix T; got 15Tokens "
     "(write 15 tokens for 15, or 15T tokens for 15T)"),
    (("compare", "--gpu", "h100-sxm,b200", "--price", "h100-sxm=2,50,b200=4.50", "--params", "7B", "--tokens", "2T"),
     f"error: price[h100-sxm] {COMMA}; got 2,50 (write 2.50 for a decimal; {ONLY_THOUSANDS})"),
    # the percent hint: none for 150% (was "did you mean 0.01?"), every figure for 12.5 (was 0.12)
    (("memory", "--params", "7B", "--gpu", "h100", "--memory", "80"),  # was 80 bytes: fits no, 175,000,000 GPUs
     "error: memory has no unit (read bare, it is bytes); got 80 (write 80GB or 80GiB, or 80B for bytes)"),
    (("train", "--flops", "1e24", "--params", "7B", "--tokens", "2T"),  # was "flops: and --tokens ..."
     "error: flops cannot be given with --tokens: both fix the run's size; got 1e24 FLOP (give two of --flops, "
     "--params and --tokens)"),
    (("memory", "--params", "7B", "--usable", "150%"), "error: usable must be in (0, 1]; got 150% (give at most 100%)"),
    (("memory", "--params", "7B", "--usable", "12.5"), "error: usable must be in (0, 1]; got 12.5 (did you mean 0.125?)"),
    (("memory", "--params", "7B", "--usable", "80"), "error: usable must be in (0, 1]; got 80 (did you mean 0.80?)"),
    (("train", "--params", "7B", "--tokens", "2T", "--gpu", "h100", "--mfu", "1.5"),
     "error: mfu must be in (0, 1]; got 1.5 (did you mean 0.015?)"),
])
def test_bad_numbers_are_one_line(run_cli, args, line):
    result = run_cli(*args, code=1)
    assert result.stdout == "" and result.stderr == line + "\n"


def test_thousands_groups_are_read(run_cli):
    grouped = run_cli("memory", "--model", "llama-3.1-8b", "--context", "8,192", "--sequences", "1,024",
                      "--gpu", "h100", "--gpus", "1,000").stdout
    assert grouped == run_cli("memory", "--model", "llama-3.1-8b", "--context", "8192", "--sequences", "1024",
                              "--gpu", "h100", "--gpus", "1000").stdout
    assert re.search(r"^  kv_total_bytes +1\.1 TB$", grouped, re.M)


def test_extreme_values_print_compactly(run_cli):
    # 80 GB x 1e30 GPUs used to print as 80000000000000000000000 EB; the most memory and GPUs napkin takes
    # (napkin.limits) still make a capacity past the largest prefix
    assert run_cli("memory", "--params", "7B", "--gpus", "1e8", "--memory", "1e24", "--gpu", "h100").stdout == (
        "Memory\n"
        "  params          7B\n"
        "  weights_bytes   14 GB\n"
        "  capacity_bytes  1e32 B\n"
        "  needed_bytes    14 GB\n"
        "  fits            yes\n"
        "  free_bytes      1e32 B\n"
        "note: weights + KV only, against the datasheet capacity: activations, CUDA context and fragmentation take a few GB more per GPU (`napkin serve` counts them: 90% of the capacity the runtime reports)\n"
    )


def test_comma_separated_lists_still_work(run_cli):
    # lists and NAME=VALUE pairs split on commas before any number is read
    assert run_cli("amortise", "--training-usd", "387,679", "--served", "500B,50T").stdout == (
        "Amortise training over served tokens\n"
        "  training_usd               $387,679\n"
        "  served_tokens              [500B, 50T]\n"
        "  amortised_usd_per_million  [$0.7754/M, $0.007754/M]\n"
    )
    out = run_cli("compare", "--gpu", "h100-sxm,b200", "--mfu", "h100-sxm=0.40,b200=0.35",
                  "--price", "h100-sxm=2.50,b200=4.50", "--params", "7B", "--tokens", "2T").stdout
    assert "  1     b200      2.25 PFLOP/s   35%  $4.50/h  " in out
    assert "  2     h100-sxm  989.5 TFLOP/s  40%  $2.50/h  " in out
    out = run_cli("train", "--params", "7B", "--tokens", "2T", "--gpu", "h100", "--price", "2.50",
                  "--vary", "mfu=0.3,0.4,0.5").stdout
    assert [line.split()[0] for line in out.splitlines()[2:5]] == ["0.3", "0.4", "0.5"]
