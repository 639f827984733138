"""Commands for the napkin rules (memory, roofline, MFU, all-reduce), and the catalog."""

from __future__ import annotations

import json

import click

from napkin.cli.common import calculator_command, guarded

model = calculator_command("model")
memory = calculator_command("memory")
roofline = calculator_command("roofline")
mfu = calculator_command("mfu")
allreduce = calculator_command("allreduce")


@click.command(help="The reviewed catalogs: gpus, models or prices, with their sources.")
@click.argument("table", type=click.Choice(["gpus", "models", "prices"]))
@click.option("--json", "as_json", is_flag=True, help="Print every entry with its source as JSON.")
@guarded
def catalog(table: str, as_json: bool) -> None:
    from napkin.catalog import catalog_rows

    rows = catalog_rows(table)
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    from napkin.cli.render import print_rows

    print_rows(rows, table)
