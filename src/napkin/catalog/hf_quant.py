"""The weight precision a Hugging Face checkpoint fixes in its ``quantization_config``.

    quant_method                    weight_precision   quantized_scope
    fp8, fbgemm_fp8                 fp8                linear (DeepSeek-V3/R1, Llama 3.1 405B FP8)
    awq, gptq, auto-round           int4 / int8 (bits) linear
    bitsandbytes                    int4 (load_in_4bit) / int8 (load_in_8bit)   linear
    mxfp4                           fp4                experts when attention is in modules_to_not_convert
                                                       (gpt-oss), else linear
    compressed-tensors              fp4 (nvfp4 formats), else fp8 / int4 / int8 from the first config group
    modelopt                        fp8 (FP8), fp4 (NVFP4), int4 (W4A16_AWQ, W4A8_AWQ)

"linear" means the attention and MLP matrices: embeddings, the output head and the norms stay
at the checkpoint's 16-bit dtype, as these tools leave them by default.

Trap: DeepSeek-V3 and R1 ship fp8 weights; read at bf16, their 671B parameters need 1.34 TB
and do not fit on 8 x H200 (1.13 TB), while the fp8 checkpoint (0.69 TB) does.
"""

from __future__ import annotations

from typing import Any

from napkin.catalog.hf import Reader
from napkin.errors import InputError

_MODELOPT = {"FP8": "fp8", "NVFP4": "fp4", "W4A16_AWQ": "int4", "W4A8_AWQ": "int4", "INT8_SQ": "int8"}


def _bits(bits: Any, r: Reader, method: str) -> str:
    if bits == 4:
        return "int4"
    if bits == 8:
        return "int8"
    raise InputError(r.field, bits, f"has a {method} quantization_config with bits other than 4 or 8",
                     f"napkin sizes 4- and 8-bit weights; give --precision by hand; file {r.path}")


def _compressed(qc: dict[str, Any]) -> str:
    fmt = str(qc.get("format", "")).lower()
    if "nvfp4" in fmt or "mxfp4" in fmt:
        return "fp4"
    groups = qc.get("config_groups") or {}
    for group in groups.values() if isinstance(groups, dict) else []:
        w = group.get("weights") if isinstance(group, dict) else None
        if isinstance(w, dict) and w.get("num_bits") in (4, 8):
            if w.get("type") == "float":
                return "fp8" if w["num_bits"] == 8 else "fp4"
            return "int4" if w["num_bits"] == 4 else "int8"
    return ""


def weight_precision(r: Reader, spec: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """ModelSpec fields weight_precision and quantized_scope from ``quantization_config`` (none: {})."""
    qc = r.cfg.get("quantization_config")
    if qc is None:
        return {}
    if not isinstance(qc, dict):
        raise InputError(r.field, str(r.path), "has config.json key 'quantization_config' that is not an object",
                         f"fix 'quantization_config' in {r.path}")
    method = str(qc.get("quant_method", "")).lower().replace("_", "-")
    scope = "linear"
    if method in ("fp8", "fbgemm-fp8"):
        prec = "fp8"
    elif method in ("awq", "gptq", "auto-round", "autoround"):
        prec = _bits(qc.get("bits", qc.get("w_bit")), r, method)
    elif method == "bitsandbytes":
        prec = "int4" if qc.get("load_in_4bit") else "int8" if qc.get("load_in_8bit") else ""
    elif method == "mxfp4":
        prec = "fp4"
        kept = " ".join(str(m) for m in qc.get("modules_to_not_convert") or [])
        if spec.get("n_experts") and "self_attn" in kept:
            scope = "experts"
    elif method == "compressed-tensors":
        prec = _compressed(qc)
    elif method == "modelopt":
        prec = _MODELOPT.get(str(qc.get("quant_algo", "")).upper(), "")
    else:
        prec = ""
    if not prec:
        notes.append(f"quantization_config quant_method {qc.get('quant_method')!r} is not one napkin reads: the "
                     "weight precision is left to --precision.")
        return {}
    what = {"experts": "the routed experts", "linear": "the attention and MLP matrices"}[scope]
    notes.append(f"quantization_config ({qc.get('quant_method')}) stores {what} at {prec}; the rest stays at the "
                 "checkpoint's 16-bit dtype.")
    return {"weight_precision": prec, "quantized_scope": scope}
