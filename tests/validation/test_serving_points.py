"""The measured serving points `napkin validate` compares against (src/napkin/validation/serving.toml).

Each point must be complete and typed as the dataset's format says, resolve against napkin's
catalogs (or carry the architecture of a model the catalog lacks), and keep its figure
consistent with what it quotes. The two architectures given inline are held to their
published parameter counts: GPT-J 6B to the 6,053,381,344 of EleutherAI's model card
(huggingface.co/EleutherAI/gpt-j-6b), Falcon 180B to the "180B" of TII's model card
(huggingface.co/tiiuae/falcon-180B), a rounded figure, so to half a unit in its last digit.
"""

from __future__ import annotations

import re
import tomllib
from datetime import date
from importlib import resources

import msgspec
import pytest

from napkin import catalog
from napkin.model import ModelSpec

POINTS = tomllib.loads(resources.files("napkin.validation").joinpath("serving.toml").read_text("utf-8"))["point"]

KEBAB = re.compile(r"^[a-z0-9]+(?:[.-][a-z0-9]+)*$")
PRECISIONS = {"fp16", "bf16", "fp8", "int8", "int4", "fp4"}
METRICS = {"output_tokens_per_s", "total_tokens_per_s", "requests_per_s", "ttft_s", "tpot_s", "itl_s",
           "e2e_latency_s"}
LATENCIES = {"ttft_s", "tpot_s", "itl_s", "e2e_latency_s"}
STATISTICS = {"mean", "median", "p90", "p99"}
SCENARIOS = {"offline", "server", "interactive", "throughput", "latency", "fixed-batch"}
REQUIRED = {
    "id": str, "source": str, "title": str, "url": str, "published": str, "accessed": str, "hardware": str,
    "gpu": str, "gpus": int, "model": str, "model_key": str, "precision": str, "metric": str, "value": float,
    "value_as_published": str, "quote": str, "note": str, "engine": str, "engine_version": str, "submitter": str,
    "kv_precision": str, "tp": int, "pp": int, "scheduling": str, "scenario": str, "batch": int,
    "input_tokens": int, "output_tokens": int,
}
OPTIONAL = {"model_config": dict, "statistic": str, "per": str, "request_rate": float, "mlp_precision": str,
            "explanation": str, "attention_dp": bool, "ep": int}
IDS = [p.get("id", f"#{i}") for i, p in enumerate(POINTS)]


def _date(text: str) -> date:
    """A `published`/`accessed` value: YYYY-MM-DD, or YYYY-MM where only the month is known."""
    return date.fromisoformat(text if len(text) == 10 else f"{text}-01")


def test_enough_points_from_enough_sources():
    # The serving-accuracy work needs 40 usable points from 6 independent sources at least.
    assert len(POINTS) >= 40
    assert len({p["source"] for p in POINTS}) >= 6


def test_ids_are_unique():
    assert len(set(IDS)) == len(IDS)


def test_covers_the_parts_engines_and_metrics_asked_for():
    assert {"a100-sxm-80gb", "h100-sxm", "h200", "mi300x"} <= {p["gpu"] for p in POINTS}
    assert {"TensorRT-LLM", "vLLM", "SGLang"} <= {p["engine"] for p in POINTS}
    assert {"output_tokens_per_s", "ttft_s", "tpot_s", "e2e_latency_s"} <= {p["metric"] for p in POINTS}
    assert any(p["source"].startswith("mlperf-") for p in POINTS)


@pytest.mark.parametrize("point", POINTS, ids=IDS)
def test_fields_and_types(point):
    missing = REQUIRED.keys() - point.keys()
    assert not missing, f"{point.get('id')}: missing {sorted(missing)}"
    unknown = point.keys() - REQUIRED.keys() - OPTIONAL.keys()
    assert not unknown, f"{point['id']}: unknown fields {sorted(unknown)}"
    for field, kind in {**REQUIRED, **OPTIONAL}.items():
        if field in point:
            # bool is an int subclass; a true/false where a count belongs is a typo
            assert isinstance(point[field], kind) and (kind is bool or not isinstance(point[field], bool)), (
                f"{point['id']}: {field} = {point[field]!r} is not {kind.__name__}")
    for field in ("title", "url", "hardware", "model", "value_as_published", "quote", "note", "engine", "submitter"):
        assert point[field].strip(), f"{point['id']}: {field} is empty"


@pytest.mark.parametrize("point", POINTS, ids=IDS)
def test_values_are_in_range(point):
    pid = point["id"]
    assert KEBAB.match(pid) and KEBAB.match(point["source"]), pid
    assert point["url"].startswith("https://"), pid
    assert _date(point["published"]) <= _date(point["accessed"]), pid
    assert point["value"] > 0, pid
    assert point["precision"] in PRECISIONS and point["kv_precision"] in PRECISIONS, pid
    assert point["metric"] in METRICS, pid
    assert point["scheduling"] in {"static", "continuous"}, pid
    assert point["scenario"] in SCENARIOS, pid
    assert point.get("per", "system") in {"system", "gpu"}, pid
    assert point["gpus"] >= 1 and point["tp"] >= 0 and point["pp"] >= 0, pid
    assert point["tp"] * point["pp"] <= point["gpus"], pid  # one replica fits in the system
    assert point["batch"] >= 0 and point["input_tokens"] >= 0 and point["output_tokens"] >= 0, pid
    if "request_rate" in point:
        assert point["request_rate"] > 0, pid
    if point["metric"] in LATENCIES:
        assert point.get("statistic") in STATISTICS, f"{pid}: a latency names its statistic"
    else:
        assert "statistic" not in point, f"{pid}: a throughput has no statistic"


@pytest.mark.parametrize("point", POINTS, ids=IDS)
def test_gpu_and_model_resolve(point):
    if point["gpu"]:
        catalog.gpu(point["gpu"])  # raises UnknownName for a key the catalog lacks
    else:  # recorded as published, counted as not modelled, and the note says why
        assert "not in napkin's accelerator catalog" in point["note"], point["id"]
    if point["model_key"]:
        assert "model_config" not in point, f"{point['id']}: give a catalog key or an architecture, not both"
        catalog.model(point["model_key"])
    else:
        spec = msgspec.convert({"name": point["model"], **point["model_config"]}, ModelSpec)
        assert spec.params > 0


@pytest.mark.parametrize(("model", "key", "published", "tolerance"), [
    ("GPT-J 6B", "gpt-j-6b", 6_053_381_344, 0.001),  # exact count, EleutherAI model card
    ("Falcon 180B", "falcon-180b", 180e9, 0.5e9 / 180e9),  # "180B", TII model card: half a unit in the last digit
])
def test_the_benchmarks_models_are_catalog_entries_matching_their_published_counts(model, key, published, tolerance):
    assert {p["model_key"] for p in POINTS if p["model"] == model} == {key}
    assert abs(catalog.model(key).params / published - 1) <= tolerance


def _number(text: str) -> float:
    return float(re.match(r"[\d,.]+", text).group().replace(",", ""))


@pytest.mark.parametrize("point", POINTS, ids=IDS)
def test_value_is_the_published_figure_in_base_units(point):
    shown = point["value_as_published"]
    number = _number(shown)
    unit = shown[len(re.match(r"[\d,.]+", shown).group()):].strip()
    if unit == "ms":
        expected = number / 1e3
    elif unit == "ns":
        expected = number / 1e9
    elif unit == "s":
        expected = number
    elif "per node" in unit:  # the only per-node figure is normalised to one GPU of an 8-GPU node
        assert point["per"] == "gpu" and "k output tokens" in unit
        expected = number * 1e3 / 8
    else:
        assert point["metric"].endswith("_per_s") and ("tok" in unit or unit == "TPS"), point["id"]
        expected = number
    assert point["value"] == pytest.approx(expected, rel=1e-9), point["id"]
    # the figure as printed appears in the quote it comes from
    assert shown.split()[0].replace("k", "") in point["quote"].replace("**", ""), point["id"]


def test_the_llama2_7b_a100_static_point():
    # TensorRT-LLM v0.5.0, A100 FP16 table: | LLaMA 7B | 32 | 1 | 2048 | 128 | 529 |
    point = next(p for p in POINTS if p["id"] == "trtllm-0.5-llama2-7b-a100-tp1-b32-2048-128-tput")
    assert (point["model_key"], point["gpu"], point["precision"]) == ("llama-2-7b", "a100-sxm-80gb", "fp16")
    assert (point["batch"], point["input_tokens"], point["output_tokens"]) == (32, 2048, 128)
    assert (point["scheduling"], point["metric"], point["value"]) == ("static", "output_tokens_per_s", 529.0)


def test_tensorrt_llms_v015_and_v017_tables_as_published():
    """TensorRT-LLM's performance overviews at v0.15.0 and v0.17.0 (docs/source/performance/perf-overview.md),
    the same trtllm-bench flow as v0.14.0: every figure of their throughput tables, 547 and 373 of them."""
    by_id = {p["id"]: p for p in POINTS}
    assert sum(p["source"] == "trtllm-perf-0.15" for p in POINTS) == 547
    assert sum(p["source"] == "trtllm-perf-0.17" for p in POINTS) == 373
    # Llama 3.1 70B in FP8 on eight H100s at 128/4,096, release over release: | 128, 4096| 12008.26| (v0.15)
    runs = [by_id[f"trtllm-{v}-llama3.1-70b-h100-fp8-tp8-128-4096-tput"]["value"] for v in ("0.14", "0.15", "0.17")]
    assert runs == [9168.709, 12008.26, 14171.43]
    # v0.15's "Mixed" column beside the H100's FP8 one is recorded as an FP16 engine
    mixed = by_id["trtllm-0.15-llama3.1-8b-h100-fp16-tp1-128-128-tput"]
    assert (mixed["value"], mixed["precision"], mixed["kv_precision"]) == (16116.63, "fp16", "fp16")
    assert "'Mixed'" in mixed["note"]
    # GH200 runs are recorded as published and modelled on the superchip's GPU (96 GB of HBM3), not its Grace memory
    gh = by_id["trtllm-0.17-llama3.1-8b-gh200-fp8-tp1-128-128-tput"]
    assert (gh["gpu"], gh["value"], gh["hardware"]) == ("gh200", 29852.96, "GH200 480GB")
    assert "the GPU's HBM only" in gh["note"]
    # Llama 3 70B shares Llama 3.1 70B's architecture and is modelled as it, saying so
    v3 = by_id["trtllm-0.15-llama3-70b-h100-fp8-tp1-128-128-tput"]
    assert (v3["model"], v3["model_key"], v3["value"]) == ("LLaMA v3 70B", "llama-3.1-70b", 3197.73)
    assert "Llama 3.1 70B's architecture" in v3["note"]


def test_the_online_serving_table_of_v014_whole():
    """TensorRT-LLM v0.14.0's Online Serving Measurements (Triton backend, 500 requests, BF16): 4 model and
    GPU blocks x 3 lengths x 6 offered rates, each row's mean TTFT and mean ITL recorded: 144 latency points."""
    rows = [p for p in POINTS if p["id"].startswith("trtllm-0.14-serve-") and p["metric"] in ("ttft_s", "itl_s")]
    assert len(rows) == 144
    assert {(p["model_key"], p["gpu"], p["tp"]) for p in rows} == {
        ("llama-3.1-70b", "h100-sxm", 4), ("llama-3.1-8b", "h100-sxm", 1), ("llama-3.1-70b", "h200", 4),
        ("llama-3.1-8b", "h200", 1)}
    assert {p.get("request_rate") for p in rows} == {2.0, 4.0, 8.0, 16.0, 32.0, None}  # None: QPS INF
    # |LLaMA 3.1 70B|H100 80GB HBM3|4|467|256|... then ||||||32|16|1229|86|11537|4083|: saturated at 16 req/s
    by_id = {p["id"]: p for p in rows}
    sat = by_id["trtllm-0.14-serve-llama3.1-70b-h100-tp4-467-256-qps32-ttft"]
    assert (sat["value"], sat["value_as_published"]) == (1.229, "1229 ms") and "achieved 16 req/s" in sat["note"]
    assert by_id["trtllm-0.14-serve-llama3.1-70b-h100-tp4-467-256-qps32-itl"]["value"] == 0.086
