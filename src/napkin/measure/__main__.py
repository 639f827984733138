"""``python -m napkin.measure``: the collectives under torchrun, or ``napkin measure``.

    torchrun --nproc-per-node N -m napkin.measure --collectives [--quick] [--save F] [--json]

Without ``--collectives`` it says to use ``napkin measure`` (the CLI, which this package never imports).
"""

from __future__ import annotations

import argparse
import os
import sys


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--collectives" not in argv:
        print("error: `python -m napkin.measure` runs the collectives under torchrun (give --collectives); "
              "one device is `napkin measure`", file=sys.stderr)
        return 1
    parser = argparse.ArgumentParser(prog="python -m napkin.measure --collectives",
                                     description="All-reduce bus bandwidth over the torchrun group.")
    parser.add_argument("--collectives", action="store_true")
    parser.add_argument("--quick", action="store_true", help="three message sizes, fewer iterations")
    parser.add_argument("--sizes", help="message sizes, comma-separated (e.g. 1MiB,64MiB)")
    parser.add_argument("--iters", type=int, default=None, help="timed all-reduces per size")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    parser.add_argument("--save", metavar="FILE.toml", help="add the figures to this calibration file")
    parser.add_argument("--json", action="store_true", dest="as_json")
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except Exception as exc:
        from napkin.errors import NapkinError

        if isinstance(exc, NapkinError):
            print(f"error: {exc}", file=sys.stderr)
            return 1
        raise


def _run(args: argparse.Namespace) -> int:
    from napkin.errors import InputError

    if "WORLD_SIZE" not in os.environ:
        raise InputError("collectives", "one process", "needs a process group",
                         "run under torchrun: torchrun --nproc-per-node N -m napkin.measure --collectives")
    try:
        import torch
        import torch.distributed as dist
    except ImportError:
        print("error: napkin measure needs PyTorch: pip install 'llm-napkin[measure]'", file=sys.stderr)
        return 1
    from napkin import units
    from napkin.measure import collectives as C
    from napkin.measure.device import cpu_name

    cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    if cuda and not torch.cuda.is_available():
        raise InputError("device", "cuda", "is not available: this PyTorch sees no CUDA device", "use --device cpu")
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if cuda:
        torch.cuda.set_device(local)
        device, backend, name = f"cuda:{local}", "nccl", torch.cuda.get_device_name(local)
    else:
        device, backend, name = "cpu", "gloo", cpu_name()
        torch.set_num_threads(1)
    if args.sizes:
        sizes = [units.parse(s.strip(), "bytes", "sizes") for s in args.sizes.split(",") if s.strip()]
    else:
        sizes = C.SIZES[("cuda" if cuda else "cpu", args.quick)]
    iters = args.iters or (5 if args.quick else 20)
    dist.init_process_group(backend=backend)
    try:
        points = C.sweep(torch, dist, sizes, device=device, warmup=2, iters=iters)
        rank = dist.get_rank()
    finally:
        dist.destroy_process_group()
    if rank != 0:
        return 0
    r = C.report(points, backend=backend, device_name=name)
    if args.save:
        _save(args.save, points, backend, name, r)
    print(r.to_json() if args.as_json else r.text())
    return 0


def _save(path: str, points: list, backend: str, name: str, r: object) -> None:
    import os

    from napkin import calibration
    from napkin.errors import InputError

    if not os.path.exists(path):
        raise InputError("save", path, "does not exist",
                         "run `napkin measure --save FILE` first; the collectives are added beside it")
    cal = calibration.load(path)
    if cal.device != name:
        raise InputError("save", path, f"holds a calibration of {cal.device!r}, not of {name!r}",
                         "save to the calibration of this device")
    cal.allreduce_bus_bytes_per_s = {p.label: p.bus_bytes_per_s for p in points}
    cal.allreduce_ranks = points[0].n_ranks if points else None
    cal.allreduce_backend = backend
    calibration.save(cal, path)
    r.note(f"all-reduce bus bandwidth added to {path}")  # type: ignore[attr-defined]


if __name__ == "__main__":
    sys.exit(main())
