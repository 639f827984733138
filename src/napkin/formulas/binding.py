"""What binds a step: the class of operators (bandwidth, compute, communication, fixed costs) that takes the most
of its time, from :func:`napkin.formulas.operators.step_operators`' table."""

from __future__ import annotations

from typing import Any

BINDING = ("bandwidth", "compute", "communication", "fixed costs")  # the classes :func:`binding` indexes
GEMMS = ("qkv", "attention_out", "mlp", "lm_head")  # the weight GEMMs of a step


def binding(ops: dict[str, Any]) -> Any:
    """class = argmax(bandwidth, compute, communication, fixed costs), an index into BINDING

    bandwidth = Σ seconds of the weight GEMMs with memory_s ≥ compute_s + attention's seconds (the KV read),
    counted only where it is at least each other class; compute = Σ seconds of the GEMMs with compute_s >
    memory_s; communication = the all-reduce; fixed costs = per-layer and per-step costs and the element-wise
    kernels. Scalars or arrays (one class per configuration); a tie goes to the class named first.

    Trap: one max() over the whole step hides the classes: at a large batch the weight GEMMs turn
    compute-bound while attention still streams the KV cache, and a small model's step is mostly fixed costs.
    Source: Williams, Waterman and Patterson 2009 ("Roofline", CACM 52(4)), applied per operator.
    """
    import numpy as np

    bound = {k: np.asarray(ops[k].memory_s) >= np.asarray(ops[k].compute_s) for k in GEMMS}
    weights = sum(np.where(bound[k], ops[k].seconds, 0.0) for k in GEMMS)
    compute = sum(np.where(bound[k], 0.0, ops[k].seconds) for k in GEMMS)
    comm = ops["allreduce"].seconds
    fixed = ops["layer_overhead"].seconds + ops["step_overhead"].seconds + ops["elementwise"].seconds
    streamed = weights + ops["attention"].seconds
    streamed = np.where(streamed >= np.maximum(np.maximum(compute, comm), fixed), streamed, 0.0)
    return np.argmax(np.stack(np.broadcast_arrays(streamed, compute, comm, fixed)), axis=0)
