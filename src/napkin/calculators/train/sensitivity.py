"""``--sensitivity``: each input moved by ±20%, ranked by how far loaded cost per million tokens moves (a tornado)."""

from __future__ import annotations

from dataclasses import dataclass, field as dfield, replace

from napkin.formulas import flops, training as T
from napkin.units import format as fmt

SENSITIVITY_STEP = 0.20  # ±20%


# --------------------------------------------------------------------------- resolved inputs
@dataclass(frozen=True)
class Inputs:
    """The numbers the cost depends on, after defaults and catalogs: what --sensitivity moves."""

    params: float  # N in the FLOPs (active for MoE)
    attention_flops_per_token: float
    tokens: float  # advanced
    peak: float
    mfu: float
    goodput: float
    price: float
    overhead: dict[str, float] = dfield(default_factory=dict)
    fixed_usd: float = 0.0
    data_usd: float = 0.0

    def loaded_usd_per_million(self) -> float:
        fpt = flops.train_flops_per_token(self.params, attention_flops=self.attention_flops_per_token)
        tps = T.tokens_per_gpu_s(self.peak, mfu=self.mfu, goodput=self.goodput, flops_per_token=fpt)
        marginal = T.marginal_usd(T.gpu_hours(self.tokens, tokens_per_gpu_s=tps), usd_per_gpu_hour=self.price)
        loaded = T.loaded_usd(marginal, overhead_multiplier=sum(self.overhead.values()),
                              fixed_usd=self.fixed_usd + self.data_usd)
        return T.usd_per_million_tokens(loaded, n_tokens=self.tokens)


# input name -> (attribute of Inputs, unit kind, capped at 1)
_SENSITIVE = {
    "params": ("params", "count", False),
    "tokens": ("tokens", "count", False),
    "peak": ("peak", "flops_per_s", False),
    "mfu": ("mfu", "fraction", True),
    "goodput": ("goodput", "fraction", True),
    "price": ("price", "usd_per_hour", False),
    "seq_len": ("attention_flops_per_token", "count", False),
    "fixed_usd": ("fixed_usd", "usd", False),
    "data_usd": ("data_usd", "usd", False),
}


ROUNDING = 1e-12  # a swing below this fraction of the base is float rounding, shown as $0/M


def sensitivity(x: Inputs, *, seq_len: float | None = None, step: float = SENSITIVITY_STEP) -> list[dict]:
    """Each input moved by ±step (fractions capped at 1), ranked by the swing in loaded $/M.

    The attention term is linear in seq_len, so moving seq_len moves that term.
    """
    base = x.loaded_usd_per_million()
    rows = []
    items: list[tuple[str, str, float, str, bool]] = []
    for name, (attr, kind, capped) in _SENSITIVE.items():
        value = getattr(x, attr)
        if name == "seq_len":
            if not value or not seq_len:
                continue
            items.append((name, attr, seq_len, kind, capped))
        elif value:
            items.append((name, attr, value, kind, capped))
    for k, v in x.overhead.items():
        if v:
            items.append((f"overhead.{k}", k, v, "number", False))
    for name, attr, value, kind, capped in items:
        lo, hi = value * (1 - step), value * (1 + step)
        if capped:
            hi = min(hi, 1.0)
        out = []
        for v in (lo, hi):
            if name.startswith("overhead."):
                moved = replace(x, overhead={**x.overhead, attr: v})
            elif name == "seq_len":
                moved = replace(x, attention_flops_per_token=x.attention_flops_per_token * v / value)
            else:
                moved = replace(x, **{attr: v})
            out.append(moved.loaded_usd_per_million())
        if abs(out[1] - out[0]) <= ROUNDING * abs(base):  # an input $/M does not depend on: no swing, not 5e-17
            out = [base, base]
        rows.append({"input": name, "unit": kind, "base_value": value, "low_value": lo, "high_value": hi,
                     "low_usd_per_million": out[0], "high_usd_per_million": out[1],
                     "swing_usd_per_million": abs(out[1] - out[0]), "base_usd_per_million": base})
    rows.sort(key=lambda r: -r["swing_usd_per_million"])
    return rows



def sensitivity_text(rows: list[dict]) -> str:
    """The tornado as a table: each input's −20% and +20% and the loaded $/M at each."""
    base = rows[0]["base_usd_per_million"] if rows else 0.0
    table = [("input", "-20% .. +20%", "loaded $/M", "swing")]
    for r in rows:
        table.append((r["input"], f"{fmt(r['low_value'], r['unit'])} .. {fmt(r['high_value'], r['unit'])}",
                      f"{fmt(r['low_usd_per_million'], 'usd_per_million')} .. "
                      f"{fmt(r['high_usd_per_million'], 'usd_per_million')}",
                      fmt(r["swing_usd_per_million"], "usd_per_million")))
    widths = [max(len(t[i]) for t in table) for i in range(4)]
    lines = [f"sensitivity of loaded cost per million tokens ({fmt(base, 'usd_per_million')}) to ±20% in each input:"]
    for t in table:
        lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(t, widths)).rstrip())
    return "\n".join(lines)

