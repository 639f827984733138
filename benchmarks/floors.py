"""napkin's speed against its floors, in one run: each figure as a ratio or a rate with its goal.

    .venv/bin/python benchmarks/floors.py [--quick] [--memory] [--no-plan]

1. Start-up: `napkin memory --params 70B --precision bf16 --json` against a bare `python -c pass`
   of the same interpreter, interleaved runs, medians of wall time (goal: at most 4x). For
   reference, msgspec (the request Structs: no answer skips it) as the command imports it and as a
   bare import, and click (which a plain answer skips).
2. `train --vary`: combinations per second of `napkin.train(..., vary=[...])` on a grid of
   1,048,576 (four inputs, 32 values each), in this process on one core (goal: at least 1M/s);
   for reference, the rate of one plan per combination (the loop it replaced).
3. `ledger report` on a 3,000,000-row CSV step log against a bare `polars.read_csv` of the same
   file, one process each of this interpreter, interleaved, medians of wall time (goal: at most
   1.5x) and of CPU time. With --memory also the peak resident memory of `ledger report` on a
   1 GB log (goal: under 500 MB).
4. `plan serve`: benchmarks/plan_bench.py, run as it stands (its own goal: 10M configurations/s);
   a ``floor_lines()`` there, when it has one, gives the lines printed here.

Every process runs as an installed napkin does: with compiled bytecode (written to a temporary
folder through PYTHONPYCACHEPREFIX, never beside the sources) and the catalogs' precompiled
copies (NAPKIN_CACHE_DIR, a temporary folder too); each command runs once before it is timed.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
NAPKIN = [sys.executable, "-c", "import sys; from napkin.cli import main; sys.argv[0] = 'napkin'; main()"]


def _run(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of user + system) of one run of ``cmd``, its output discarded."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def interleaved(cmds: dict[str, list[str]], repeat: int) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) of each command, run in turn ``repeat`` times after one warm-up run each."""
    for cmd in cmds.values():
        _run(cmd)
    runs: dict[str, list[tuple[float, float]]] = {k: [] for k in cmds}
    for _ in range(repeat):
        for name, cmd in cmds.items():
            runs[name].append(_run(cmd))
    return {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in runs.items()}


def startup(repeat: int) -> None:
    cmds = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "napkin memory": [*NAPKIN, "memory", "--params", "70B", "--precision", "bf16", "--json"],
        "import msgspec": [sys.executable, "-c", "import msgspec"],
        "msgspec as napkin": [sys.executable, "-c", "from napkin.cli import _import_msgspec; _import_msgspec()"],
        "import click": [sys.executable, "-c", "import click"],
    }
    t = interleaved(cmds, repeat)
    base = t["python -c pass"][0]
    ratio = t["napkin memory"][0] / base
    print(f"start-up      napkin memory --params 70B --precision bf16 --json: {t['napkin memory'][0] * 1e3:.1f} ms, "
          f"{ratio:.2f}x python -c pass ({base * 1e3:.1f} ms)   goal <= 4x: {'met' if ratio <= 4 else 'NOT MET'}")
    print(f"              CPU {t['napkin memory'][1] / t['python -c pass'][1]:.2f}x; medians of {repeat} interleaved "
          f"runs. For reference, msgspec as napkin's command imports it (without typing_extensions) is "
          f"{t['msgspec as napkin'][0] / base:.2f}x, a bare import of msgspec {t['import msgspec'][0] / base:.2f}x "
          f"and of click {t['import click'][0] / base:.2f}x")


def vary(repeat: int) -> None:
    import napkin
    from napkin.calculators.train.vary import parse_vary, plan_rows

    def values(lo: float, hi: float, n: int, unit: str = "") -> str:
        return ",".join(f"{lo + (hi - lo) * i / (n - 1):.6g}{unit}" for i in range(n))

    axes = [f"mfu={values(0.2, 0.6, 32)}", f"goodput={values(0.7, 0.99, 32)}", f"price={values(1, 5, 32)}",
            f"tokens={values(1, 20, 32, 'T')}"]
    base = dict(params="7B", tokens="2T", gpu="h100", gpus=1024, overhead="experiments=0.6,eval=0.05")
    napkin.train(**base, vary=axes[:1])  # warm: imports, catalogs
    times, n = [], 0
    for _ in range(repeat):
        t0 = time.process_time()
        r = napkin.train(**base, vary=axes)
        times.append(time.process_time() - t0)
        n = len(r["vary"]["rows"])
    t = statistics.median(times)
    small = parse_vary(["mfu=0.3,0.4,0.5,0.6", "price=2,2.5,3,3.5,4", "gpus=512,1024,2048,4096,8192"])
    raw = {"params": 7e9, "tokens": 2e12, "gpu": "h100"}
    t0 = time.process_time()
    plan_rows(raw, small)
    per_plan = 100 / (time.process_time() - t0)
    print(f"train --vary  {n:,} combinations (4 inputs x 32 values) in {t * 1e3:.0f} ms CPU: {n / t / 1e6:.1f}M "
          f"combinations/s on one core   goal >= 1M/s: {'met' if n / t >= 1e6 else 'NOT MET'}")
    print(f"              for reference, one plan per combination (the loop the grid replaced): {per_plan:,.0f}/s")


def ledger(repeat: int, rows: int, memory: bool) -> None:
    sys.path.insert(0, str(HERE))
    import ledger_bench

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "steps.csv")
        ledger_bench.make_log(path, rows, False)
        cmds = {"polars": [sys.executable, "-c", f"import polars as pl; pl.read_csv({path!r})"],
                "napkin": [*NAPKIN, "ledger", "report", "--price", "2.50/h", "--no-store", path]}
        size = os.path.getsize(path)
        t = interleaved(cmds, repeat)
    ratio = t["napkin"][0] / t["polars"][0]
    print(f"ledger        napkin ledger report on a {rows:,}-row CSV ({size / 1e6:.0f} MB): {t['napkin'][0]:.2f} s, "
          f"{ratio:.2f}x a bare polars.read_csv ({t['polars'][0]:.2f} s)   goal <= 1.5x: "
          f"{'met' if ratio <= 1.5 else 'NOT MET'}")
    print(f"              CPU {t['napkin'][1]:.2f} s against {t['polars'][1]:.2f} s: "
          f"{t['napkin'][1] / t['polars'][1]:.2f}x; medians of {repeat} interleaved runs, one process each")
    if memory:
        import contextlib
        import io

        said = io.StringIO()
        with contextlib.redirect_stdout(said):
            ledger_bench.memory(argparse.Namespace(gb=1.0))
        for line in said.getvalue().splitlines():
            print(f"              {line.strip()}")


def plan_serve() -> None:
    sys.path.insert(0, str(HERE))
    import plan_bench

    if hasattr(plan_bench, "floor_lines"):  # the planner's own summary, when plan_bench.py gives one
        for line in plan_bench.floor_lines():
            print(f"plan serve    {line}")
        return
    out = subprocess.run([sys.executable, str(HERE / "plan_bench.py")], check=True, capture_output=True, text=True)
    print("plan serve    benchmarks/plan_bench.py (goal: napkin.plan_serve >= 10M configurations/s):")
    for line in out.stdout.splitlines():
        print(f"              {line}")


def environment(tmp: str) -> None:
    """Bytecode and catalog copies as an installed napkin has them, both in ``tmp``."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False
    os.environ["PYTHONPYCACHEPREFIX"] = os.path.join(tmp, "pycache")
    sys.pycache_prefix = os.environ["PYTHONPYCACHEPREFIX"]
    os.environ["NAPKIN_CACHE_DIR"] = os.path.join(tmp, "napkin-cache")


def temporary_environment() -> tempfile.TemporaryDirectory:
    """:func:`environment` in a temporary folder of its own, removed when the returned object is dropped
    (the other benchmark scripts' set-up)."""
    tmp = tempfile.TemporaryDirectory()
    environment(tmp.name)
    return tmp


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer runs (a rough look, not the figures to quote)")
    ap.add_argument("--memory", action="store_true", help="also the ledger's peak memory on a 1 GB log (slow)")
    ap.add_argument("--no-plan", action="store_true", help="leave out plan serve")
    ap.add_argument("--rows", type=int, default=3_000_000, help="rows of the ledger's CSV log")
    a = ap.parse_args()
    print(f"napkin against its floors: Python {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"{datetime.date.today().isoformat()}")
    with tempfile.TemporaryDirectory() as tmp:
        environment(tmp)
        startup(10 if a.quick else 40)
        vary(3 if a.quick else 7)
        ledger(3 if a.quick else 9, a.rows, a.memory)
        if not a.no_plan:
            plan_serve()


if __name__ == "__main__":
    main()
