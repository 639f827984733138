"""Checks of a model's attention heads: a config that looks like it confused query heads with KV heads."""

from __future__ import annotations

from napkin.derivation import Report
from napkin.model import ModelSpec

# the Hugging Face loader's note when a Llama-family config.json has no num_key_value_heads
ABSENT_KV_HEADS = "num_key_value_heads is absent"


def check_heads(r: Report, m: ModelSpec) -> None:
    """Warn where a config looks like it confused query heads with KV heads (issue 6: "GQA ... and a
    warning if a config looks like it confused them"): KV heads that do not divide the query heads,
    a GQA/MQA model listing as many KV heads as query heads, a config.json with no
    num_key_value_heads (read as MHA), and a large config.json that lists one KV head per query head.
    Catalog entries are checked against their published parameter counts, so a large MHA entry
    (GPT-3) gets a note, not a warning."""
    if m.attention == "mla":
        return
    config = m.key.startswith("hf:")
    group8 = f" ({m.n_heads // 8}x with 8 KV heads)" if m.n_heads > 8 and m.n_heads % 8 == 0 else ""
    if m.n_heads % m.n_kv_heads:
        r.warn("kv-heads", f"{m.n_kv_heads} KV heads do not divide {m.n_heads} query heads: check n_kv_heads "
                           "(num_key_value_heads) in the config")
    elif m.attention in ("gqa", "mqa") and m.n_kv_heads == m.n_heads:
        r.warn("kv-heads", f"{m.name} is marked {m.attention.upper()} but lists as many KV heads as query heads "
                           f"({m.n_heads}): if it shares KV heads, the config confused them and the KV cache "
                           "here is too large by the group size")
    elif config and ABSENT_KV_HEADS in m.note:
        r.warn("kv-heads", f"the config of {m.name} has no num_key_value_heads, so it is read as MHA with "
                           f"{m.n_kv_heads} KV heads (the transformers default): if the checkpoint shares KV heads "
                           f"(GQA), the KV cache here is too large by heads / kv_heads{group8}: check the model card "
                           "and add num_key_value_heads")
    elif m.n_kv_heads == m.n_heads and m.n_heads >= 32 and m.d_model >= 4096:
        if config:
            r.warn("kv-heads", f"the config of {m.name} lists as many KV heads as query heads ({m.n_heads}) at "
                               f"d_model {m.d_model:,}: models this size usually share KV heads (GQA); if this one "
                               f"does, the config confused them and the KV cache here is too large by the group "
                               f"size{group8}")
        else:  # a catalog entry: its head counts are checked against the published parameter count
            r.note(f"{m.name} caches K and V for all {m.n_heads} heads (MHA); a GQA model whose config omits "
                   "num_key_value_heads would look the same, with a KV cache 8x too large")
