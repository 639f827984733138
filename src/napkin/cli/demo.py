"""`napkin demo`: the headline question answered with its working, then a tour.

What does one training token of a 7B model on 2T tokens cost, marginal and loaded?
(The worked example: H100 dense bf16 peak, 40% MFU, 90% goodput, $2.50 per
GPU-hour, overheads of 0.6 + 0.15 + 0.05 + 0.2 and $60k fixed.)
"""

from __future__ import annotations

import click

from napkin.cli.common import guarded

HEADLINE = {
    "params": "7B", "tokens": "2T", "gpu": "h100-sxm", "mfu": "0.40", "goodput": "0.90", "price": "2.50/h",
    "overhead": {"experiments": "0.6", "lost": "0.15", "eval": "0.05", "idle": "0.2"}, "fixed_usd": "60k",
}

# (calculator, raw request, the question it answers) shown after the headline when built
TOUR = [
    ("memory", {"model": "llama-3.1-70b", "context": "8Ki", "sequences": "32", "gpu": "h100-sxm", "gpus": "4"},
     "Does Llama 3.1 70B with 32 users at 8k context fit on 4 H100s?"),
    ("serve", {"model": "llama-3.1-70b", "gpu": "h100-sxm", "gpus": "8", "prompt": "1000", "output": "300",
               "batch": "32", "price": "2.50/h"},
     "How fast does it decode on 8 H100s, and what does a million tokens cost?"),
    ("journey", {}, "One 11-word question through Llama 3.1 405B, with the FLOPs meter."),
]


@click.command(help="Answer the headline question (cost of one training token, 7B on 2T) with its working.")
@click.option("--tour/--no-tour", default=True, help="Also show the other calculators' headline answers.")
@guarded
def demo(tour: bool) -> None:
    from napkin import calculators

    click.echo("What does one training token cost? 7B parameters, 2T tokens, H100\n")
    r = calculators.get("train")(HEADLINE)
    click.echo(r.text())
    click.echo("")
    click.echo(r.explain())
    if not tour:
        return
    for name, raw, question in TOUR:
        rep = calculators.get(name)(raw)  # every calculator of the tour is built: a failure is a bug, shown as one
        click.echo(f"\n{question}\n")
        if name == "journey":  # rung by rung, as `napkin journey` prints it
            from napkin import render_doc

            click.echo(render_doc.journey_text(render_doc.data(rep)))
        else:
            click.echo(rep.text())
