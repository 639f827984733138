#!/usr/bin/env bash
# The GPU check of `napkin measure`: one prepared run on a CUDA machine, under 5 minutes
# on an H100/H200, writing build/gpu_check.json (and the calibration beside it).
#
#   benchmarks/gpu_check.sh                 # full measurement on the CUDA GPU(s) here
#   CHECK_DEVICE=cpu CHECK_QUICK=1 benchmarks/gpu_check.sh   # a dry run of this script on a CPU
#
# Steps: `napkin measure --device cuda --json --save build/calibration.toml` (full, not
# quick), then, with more than one local GPU, the all-reduce sweep over all of them
# under torchrun (NCCL), added to the same calibration; then a JSON summary: matmul
# ceiling vs the catalog peak per precision, copy bandwidth vs the catalog, MFU of the
# small model, decode against its roofline, and whether the machine was contended.
#
# Everything it writes is under build/ in this repository, caches included. It needs a
# Python with a CUDA build of PyTorch and napkin's dependencies (pip install -e '.[measure]');
# it uses .venv/bin/python when there is one, else $PYTHON or python3, and src/ on the path.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT="$ROOT/build"
mkdir -p "$OUT/cache"
# keep every cache this run might touch inside the repository
export XDG_CACHE_HOME="$OUT/cache" TORCH_HOME="$OUT/cache/torch" CUDA_CACHE_PATH="$OUT/cache/nv" \
       TRITON_CACHE_DIR="$OUT/cache/triton" TMPDIR="$OUT/cache/tmp" MPLCONFIGDIR="$OUT/cache/mpl"
mkdir -p "$TMPDIR"

PY=${PYTHON:-}
if [ -z "$PY" ]; then
  if [ -x "$ROOT/.venv/bin/python" ]; then PY="$ROOT/.venv/bin/python"; else PY=python3; fi
fi
if ! "$PY" -c "import napkin" 2>/dev/null; then
  export PYTHONPATH="$ROOT/src${PYTHONPATH:+:$PYTHONPATH}"
fi
DEVICE=${CHECK_DEVICE:-cuda}
QUICK=()
if [ -n "${CHECK_QUICK:-}" ]; then QUICK=(--quick); fi

started=$(date +%s)
if [ "$DEVICE" = cuda ]; then
  NGPU=$("$PY" -c "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)")
  if [ "$NGPU" -lt 1 ]; then
    echo "gpu_check: this PyTorch sees no CUDA device ($("$PY" -c 'import torch; print(torch.__version__)'))" >&2
    exit 1
  fi
  NPROC=${CHECK_NPROC:-$NGPU}
else
  NPROC=${CHECK_NPROC:-2}
fi
echo "gpu_check: measuring on $DEVICE ($NPROC for the collectives)" >&2

rm -f "$OUT/calibration.toml" "$OUT/measure.json" "$OUT/collectives.json"
timeout 240 "$PY" -m napkin.measure --device "$DEVICE" ${QUICK[@]+"${QUICK[@]}"} --json \
  --save "$OUT/calibration.toml" > "$OUT/measure.json"
echo "gpu_check: measure done in $(( $(date +%s) - started )) s" >&2

if [ "$NPROC" -gt 1 ]; then
  timeout 90 "$PY" -m torch.distributed.run --standalone --nproc-per-node "$NPROC" \
    -m napkin.measure --collectives --device "$DEVICE" ${QUICK[@]+"${QUICK[@]}"} \
    --save "$OUT/calibration.toml" --json > "$OUT/collectives.json"
  echo "gpu_check: collectives done in $(( $(date +%s) - started )) s" >&2
fi

"$PY" - "$OUT" "$started" <<'EOF'
import json, sys, time
from pathlib import Path

from napkin.units import format as fmt

out = Path(sys.argv[1])
m = json.loads((out / "measure.json").read_text())
coll_path = out / "collectives.json"
coll = json.loads(coll_path.read_text()) if coll_path.exists() else None
precisions = sorted({k.split("_")[1] for k in m if k.startswith("matmul_") and k.endswith("_ceiling_flops_per_s")})
summary = {
    "device": m["device"],
    "catalog_gpu": m["catalog_gpu"],
    "date": m["date"],
    "matmul": {p: {"ceiling_flops_per_s": m[f"matmul_{p}_ceiling_flops_per_s"],
                   "median_flops_per_s": m[f"matmul_{p}_median_flops_per_s"],
                   "shape": m[f"matmul_{p}_shape"],
                   "catalog_peak_flops_per_s": m.get(f"matmul_{p}_catalog_peak_flops_per_s"),
                   "fraction_of_peak": m.get(f"matmul_{p}_fraction_of_peak")} for p in precisions},
    "copy_bytes_per_s": m.get("copy_bytes_per_s"),
    "read_bytes_per_s": m.get("read_bytes_per_s"),
    "catalog_bytes_per_s": m.get("catalog_bytes_per_s"),
    "bandwidth_fraction": m.get("bandwidth_fraction"),
    "train_model": m.get("train_model"),
    "train_params": m.get("train_params"),
    "train_tokens_per_s": m.get("train_tokens_per_s"),
    "train_mfu": m.get("train_mfu"),
    "train_mfu_of_ceiling": m.get("train_mfu_of_ceiling"),
    "train_counter_ratio": m.get("train_counter_ratio"),
    "decode": {k: v for k, v in m.items() if k.startswith("decode_b")},
    "contended": m.get("contended"),
    "warnings": m.get("warnings", []),
    "allreduce": None if coll is None else {
        "ranks": coll["ranks"], "backend": coll["backend"],
        "bus_bytes_per_s": {k[len("allreduce_"):-len("_bus_bytes_per_s")]: v
                            for k, v in coll.items() if k.startswith("allreduce_")}},
    "wall_s": time.time() - float(sys.argv[2]),
}
(out / "gpu_check.json").write_text(json.dumps({"summary": summary, "measure": m, "collectives": coll}, indent=2))
print(f"device {summary['device']} ({summary['catalog_gpu']}), {summary['date']}")
for p, r in summary["matmul"].items():
    frac = (f" = {r['fraction_of_peak']:.1%} of the catalog's {fmt(r['catalog_peak_flops_per_s'], 'flops_per_s')}"
            if r["fraction_of_peak"] else " (no catalog peak)")
    print(f"  matmul {p}: {fmt(r['ceiling_flops_per_s'], 'flops_per_s')} at {r['shape']}{frac}")
bwf = summary["bandwidth_fraction"]
print(f"  copy: {fmt(summary['copy_bytes_per_s'], 'bytes_per_s')} (read + written)"
      + (f" = {bwf:.1%} of the catalog's {fmt(summary['catalog_bytes_per_s'], 'bytes_per_s')}" if bwf else ""))
mfu = summary["train_mfu"] if summary["train_mfu"] is not None else summary["train_mfu_of_ceiling"]
basis = "the catalog peak" if summary["train_mfu"] is not None else "the measured ceiling"
print(f"  MFU of {summary['train_model']}: {mfu:.1%} of {basis}")
if summary["allreduce"]:
    best = max(summary["allreduce"]["bus_bytes_per_s"].values())
    print(f"  all-reduce over {summary['allreduce']['ranks']} ranks: best bus bandwidth {fmt(best, 'bytes_per_s')}")
print(f"  contended: {summary['contended']}; {summary['wall_s']:.0f} s; written {out / 'gpu_check.json'}")
EOF
