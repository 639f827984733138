"""``napkin measure``: measure the local accelerator; ``--save`` a calibration for plans."""

from __future__ import annotations

import sys
from typing import Any, Callable

import click

from napkin.cli.common import emit, fail, guarded
from napkin.errors import NapkinError

NEEDS_TORCH = "napkin measure needs PyTorch: pip install 'llm-napkin[measure]'"


def _precisions(values: tuple[str, ...]) -> tuple[str, ...] | None:
    from napkin.hardware import precision

    out: list[str] = []
    for v in values:
        for part in str(v).split(","):
            if part.strip():
                out.append(precision(part.strip(), "precision"))
    return tuple(dict.fromkeys(out)) or None


def _progress(as_json: bool) -> tuple[Callable[[str], None] | None, Callable[[], None]]:
    """A progress callback on stderr when it is a terminal (a rich spinner), else nothing."""
    if as_json or not sys.stderr.isatty():
        return None, lambda: None
    from rich.console import Console

    console = Console(stderr=True)
    status = console.status("napkin measure: starting", spinner="dots")
    status.start()
    done: list[str] = []

    def update(message: str) -> None:
        section = message.split(" ", 1)[0].rstrip(":")
        if done and done[-1] != section:
            console.print(f"[dim]  done: {done[-1]}[/dim]", highlight=False)
        if not done or done[-1] != section:
            done.append(section)
        status.update(f"napkin measure: {message}")

    def stop() -> None:
        status.stop()

    return update, stop


@click.command(context_settings={"max_content_width": 100},
               help="Measure the local accelerator: matmul ceiling, memory bandwidth, MFU of a short "
                    "training run, decode against the roofline, and how noisy the machine was. "
                    "--save writes a calibration for `napkin train|serve --calibration F`.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True,
              help="Device to measure; auto picks CUDA when PyTorch sees one.")
@click.option("--quick", is_flag=True, help="Smaller sweep and model (under a minute on a 2-core CPU).")
@click.option("--precision", "precisions", multiple=True, metavar="P[,P...]",
              help="Matmul precisions to time (default: fp32,bf16 on a CPU; bf16,fp16,tf32,fp32 on a GPU).")
@click.option("--recompute", is_flag=True, help="Recompute activations in the training run; report HFU beside MFU.")
@click.option("--save", metavar="FILE.toml", help="Write the measured efficiencies as a calibration file.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: base units, derivation, warnings.")
@click.option("--explain", is_flag=True, help="Print the derivation behind every figure.")
@guarded
def measure(device: str, quick: bool, precisions: tuple[str, ...], recompute: bool, save: str | None,
            as_json: bool, explain: bool) -> None:
    try:
        import torch  # noqa: F401  (only to say plainly when it is missing)
    except ImportError:
        fail(NEEDS_TORCH)
    from napkin import measure as M

    if save:
        from napkin.calibration import check_writable

        check_writable(save)  # before minutes of measuring, not after
    opts = M.Options(device=device, quick=quick, precisions=_precisions(precisions), recompute=recompute)
    progress, stop = _progress(as_json)
    try:
        result = M.run(opts, progress=progress)
    finally:
        stop()
    report = M.report(result)
    failed = None
    if save:
        try:
            _save(result, save, report)
        except (OSError, NapkinError) as exc:  # the measurements are still worth printing
            failed = str(exc)
    emit(report, as_json=as_json, explain=explain)
    if failed:
        fail(f"save could not be written ({failed}); the measurements above were not saved")


def _save(result: Any, path: str, report: Any) -> None:
    """Write the calibration (the library keeps collective figures already in the file) and say so."""
    from napkin import calibration
    from napkin.measure import to_calibration

    cal = calibration.save_merged(to_calibration(result), path)
    report.set("calibration_path", path)
    report.note(f"calibration written to {path}: use it with `napkin train --calibration {path}` "
                f"or `napkin serve --calibration {path}`")
    if cal.contended:
        report.warn("contended-calibration", f"{path} was measured on a contended machine and says so "
                                             f"(contended = true); its efficiencies understate the device")
