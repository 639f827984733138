"""Rank accelerators for one training job by cost per million tokens and FLOP per dollar.

Each candidate runs through the ``train`` calculator with its own peak, MFU and price,
so every row has the same working as ``napkin train``. The first part listed is the
baseline: a newer part is compared against the incumbent as

    relative_value = (peak / peak_baseline) · MFU / (price / price_baseline)

(2.2 · 0.35 / 1.8 = 0.43 against 0.40: about 7% cheaper per token). An MFU not given
for a part is a guess, and the output says a short measured trial should replace it.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from napkin import calculators, catalog
from napkin.calculators import Calculator
from napkin.derivation import Assumption, Report
from napkin.errors import InputError, UnknownName
from napkin.formulas import flops, training as T
from napkin.request import field
from napkin.units import format as fmt

S = msgspec.Struct
ALL = "all"  # --price all=2.50/h (or a lone --price 2.50/h): one price for every part


class CompareRequest(S, kw_only=True, forbid_unknown_fields=True):
    gpu: Annotated[list[str], field("name", "accelerators to rank; the first is the baseline")]
    model: Annotated[str | None, field("name", "catalog model or path to a config.json (instead of --params)")] = None
    params: Annotated[float | None, field("count", "parameters N", gt=0)] = None
    tokens: Annotated[float | None, field("count", "advanced tokens D of the run", gt=0)] = None
    precision: Annotated[str, field("precision", "training precision")] = "bf16"
    mfu: Annotated[dict[str, float], field("fraction", f"MFU per part (not given: "
                                                      f"{catalog.default_value('training_mfu'):.2f}, a guess)",
                                           example="h100-sxm=0.40,b200=0.35")] = {}
    price: Annotated[dict[str, float], field("usd_per_hour", "loaded $/GPU-hour per part (not given: the "
                                                             "catalog's dated reference price); one value with "
                                                             "no name prices every part alike (a warning)", gt=0,
                                             example="h100-sxm=2.50,b200=4.50", bare="all")] = {}
    peak: Annotated[dict[str, float], field("flops_per_s", "dense peak per part by hand (a part not in the "
                                                           "catalog needs one)", gt=0,
                                            example="next-gen=2.2P")] = {}
    goodput: Annotated[float | None, field("fraction", f"goodput, the same on every part (default "
                                                       f"{catalog.default_value('training_goodput'):.0%}, assumed)")] = None
    flops_convention: Annotated[str, field("choice", "FLOPs per token: 6N, or with the attention term",
                                           choices=flops.CONVENTIONS)] = "6N"
    seq_len: Annotated[float | None, field("count", "sequence length (for causal/full FLOPs)", gt=0)] = None


def _part_key(name: str, field_name: str, hand: set[str] | None = None) -> str:
    """A catalog key for a part name (aliases resolve), or the name itself for a part given by hand."""
    try:
        return catalog.gpu(name, field_name).key
    except UnknownName:
        if hand is not None and name.strip().lower() in hand:
            return name.strip().lower()
        raise


def _by_part(values: dict[str, float], option: str, parts: list[str], hand: set[str]) -> dict[str, float]:
    """Re-key a NAME=VALUE option by part key; a name not among --gpu is an error."""
    out = {}
    for name, v in values.items():
        try:
            key = _part_key(name, option, hand)
        except UnknownName:
            key = name.strip().lower()
        if key not in parts:
            raise InputError(option, f"{name}={v:g}", "must name a part in --gpu",
                             "use one of " + ", ".join(parts))
        out[key] = v
    return out


class CompareReport(Report):
    """A Report whose text is the ranking as a table."""

    def rows(self) -> list[tuple[str, str]]:
        """Scalar results, then one row per part in rank order (the web page and rich table show these)."""
        out = [(k, v) for k, v in super().rows() if k != "ranking"]
        for row in self.results.get("ranking", []):
            out.append((f"{row['rank']}. {row['gpu']}",
                        f"{fmt(row['usd_per_million_tokens'], 'usd_per_million')} at "
                        f"{fmt(row['mfu'], 'fraction')} MFU{' (guess)' if row['mfu_basis'] == 'guess' else ''}, "
                        f"{fmt(row['usd_per_gpu_hour'], 'usd_per_hour')}"
                        f"{'' if row['price_basis'] == 'given' else ' (reference)'}; "
                        + ("the baseline" if row["gpu"] == self.results.get("baseline") else
                           f"{row['per_token_vs_baseline'] - 1:+.1%} per token vs {self.results.get('baseline')}")))
        return out

    def text(self) -> str:
        lines = [self.title, ranking_text(self.results.get("ranking", []), self.results.get("baseline", ""))]
        return "\n".join(lines + self.footer())


def ranking_text(ranking: list[dict], baseline: str) -> str:
    """The ranked parts as an aligned table."""
    head = ("rank", "gpu", "dense peak", "mfu", "$/GPU-h", "tokens/GPU-s", "GPU-hours", "$/M tokens",
            "FLOP per $", "value", f"vs {baseline}")
    table = [head]
    for row in ranking:
        vs = row["per_token_vs_baseline"] - 1
        table.append((
            str(row["rank"]), row["gpu"], fmt(row["dense_flops_per_s"], "flops_per_s"),
            fmt(row["mfu"], "fraction") + (" (guess)" if row["mfu_basis"] == "guess" else ""),
            fmt(row["usd_per_gpu_hour"], "usd_per_hour") + ("" if row["price_basis"] == "given" else " (ref)"),
            fmt(row["tokens_per_gpu_s"], "per_s"), fmt(row["gpu_hours"], "count"),
            fmt(row["usd_per_million_tokens"], "usd_per_million"), fmt(row["delivered_flops_per_usd"], "flops"),
            f"{row['relative_value']:.3f}",
            "baseline" if row["gpu"] == baseline else f"{vs:+.1%}",
        ))
    widths = [max(len(t[i]) for t in table) for i in range(len(head))]
    return "\n".join("  " + "  ".join(c.ljust(w) for c, w in zip(t, widths)).rstrip() for t in table)


def run_compare(req: CompareRequest) -> Report:
    hand = {k.strip().lower() for k in req.peak}
    if not req.gpu:  # `--gpu ''`: an empty list (was an IndexError at the baseline)
        raise InputError("gpu", "an empty list", "must name at least one accelerator", "e.g. --gpu h100-sxm,b200")
    parts: list[str] = []
    for name in req.gpu:
        try:
            key = _part_key(name, "gpu", hand)
        except UnknownName as exc:
            near = f"closest: {', '.join(exc.matches)}; " if exc.matches else ""
            raise InputError("gpu", name, "is not in the catalog",
                             f"{near}or define it by hand with --peak {name}=FLOP/S --price {name}=$/H") from None
        if key in parts:
            raise InputError("gpu", name, "is listed twice", "list each part once")
        parts.append(key)
    mfus = _by_part(req.mfu, "mfu", parts, hand)
    every = {k: v for k, v in req.price.items() if k.strip().lower() == ALL and ALL not in parts}
    prices = _by_part({k: v for k, v in req.price.items() if k not in every}, "price", parts, hand)
    for_all = [p for p in parts if p not in prices] if every else []
    prices.update({p: next(iter(every.values())) for p in for_all})
    peaks = _by_part(req.peak, "peak", parts, hand)

    r = CompareReport("Compare", command="compare")
    train = calculators.get("train")  # each part runs through `napkin train`
    rows: list[dict] = []
    for key in parts:
        in_catalog = key not in hand or _in_catalog(key)
        if not in_catalog and key not in prices:
            raise InputError("price", "nothing", f"is required for {key}, a part given by hand",
                             f"give --price {key}=4.50")
        if in_catalog and key not in prices and catalog.gpu_hour_price(key) is None:  # name the part, not one price
            raise InputError("price", "nothing", f"is required for {key}: the catalog has no reference price for the "
                             f"{catalog.gpu(key).name}", f"give --price {key}=2.50 (your loaded $/GPU-hour for it)")
        raw: dict[str, Any] = {
            "model": req.model, "params": req.params, "tokens": req.tokens, "precision": req.precision,
            "flops_convention": req.flops_convention, "seq_len": req.seq_len,
            "gpu": key if in_catalog else None, "peak": peaks.get(key), "mfu": mfus.get(key),
            "goodput": req.goodput, "price": prices.get(key),
        }
        part = train(raw)
        r.merge(_only_part(part, key), prefix=f"{key}: ")
        rows.append(_row(part, key, name=catalog.gpu(key).name if in_catalog else f"{key} (by hand)",
                         guess=key not in mfus))
        if r.results.get("params") is None:
            for k in ("model", "params", "flops_convention", "flops_per_token", "advanced_tokens", "train_flops",
                      "precision", "goodput"):
                if k in part.results:
                    r.set(k, part[k], part.units.get(k))

    _relative(r, rows)
    ranked = sorted(rows, key=lambda x: x["usd_per_million_tokens"])
    for i, row in enumerate(ranked, 1):
        row["rank"] = i
    r.set("baseline", rows[0]["gpu"])
    r.set("ranking", ranked)
    r.set("cheapest", ranked[0]["gpu"])
    r.set("denominator", "advanced tokens (marginal cost: the final run's compute)")

    guessed = [row["gpu"] for row in rows if row["mfu_basis"] == "guess"]
    if guessed:
        r.warn("mfu-guessed", f"no MFU given for {', '.join(guessed)}: "
                              f"{catalog.default_value('training_mfu'):.2f} is a guess; a short "
                              "measured trial on each candidate should replace it")
    listed = [row["gpu"] for row in rows if row["price_basis"] != "given"]
    _price_warnings(r, listed, for_all, next(iter(every.values()), None))
    if listed and len(listed) < len(rows):
        r.warn("mixed-prices", f"prices mix rates given by hand with reference list prices ({', '.join(listed)}): "
                               "rank on loaded prices for every part, or list prices for every part")
    r.note("rank with MFU measured in a short full-scale trial on each candidate, never with peaks alone: the MFU "
           "gap between a mature and an immature software stack is often larger than the price gap")
    who = r.results.get("model") or f"{fmt(r['params'], 'count')} params"
    r.title = f"Compare: {who} on {fmt(r['advanced_tokens'], 'count')} tokens, {req.precision}, " \
              f"{req.flops_convention} FLOPs per token"
    return r


def _price_warnings(r: Report, listed: list[str], for_all: list[str], price: float | None) -> None:
    """One warning for the parts at catalog list prices (and one for their age), and one when a single
    --price was applied to several parts (they rent at different prices)."""
    from napkin.calculators.resolve import warn_if_stale_prices

    r.warnings = [w for w in r.warnings if w.code not in ("list-price", "stale-price")]
    if len(for_all) > 1 and price is not None:
        r.warn("one-price-for-all", f"--price {fmt(price, 'usd_per_hour')} is applied to {', '.join(for_all)}: the "
                                    "parts rent at different prices; give --price NAME=$/H for each, or none for "
                                    "each part's catalog price")
    if listed:
        r.warn("list-price", f"no --price for {', '.join(listed)}: each at its catalog reference list price (ref); "
                             "a loaded GPU-hour adds power, networking, storage and support (`napkin gpu-hour`)")
        warn_if_stale_prices(r, [(catalog.gpu_hour_price(k), f"the {catalog.gpu(k).name}") for k in listed
                                 if catalog.gpu_hour_price(k) is not None])


def _row(part: Report, key: str, *, name: str, guess: bool) -> dict:
    """One part's row of the ranking, from its `napkin train` Report."""
    return {
        "gpu": key,
        "name": name,
        "dense_flops_per_s": part["dense_flops_per_s"],
        "mfu": part["mfu"],
        "mfu_basis": "guess" if guess else "given",
        "usd_per_gpu_hour": part["price"],
        "price_basis": part["price_basis"],
        "tokens_per_gpu_s": part["tokens_per_gpu_s"],
        "gpu_hours": part["gpu_hours"],
        "marginal_usd": part["marginal_usd"],
        "usd_per_million_tokens": part["usd_per_million_tokens"]["marginal"],
        "delivered_flops_per_usd": T.delivered_flops_per_usd(part["dense_flops_per_s"], mfu=part["mfu"],
                                                             usd_per_gpu_hour=part["price"], goodput=part["goodput"]),
    }


def _relative(r: Report, rows: list[dict]) -> None:
    """Each part against the first (the baseline): its relative value, and its cost per token."""
    base = rows[0]
    for row in rows:
        row["relative_value"] = r.step(
            f"{row['gpu']}: relative_value", "(peak / peak_base) · MFU / (price / price_base)",
            value=T.relative_value(row["dense_flops_per_s"], mfu=row["mfu"], usd_per_gpu_hour=row["usd_per_gpu_hour"],
                                   baseline_flops_per_s=base["dense_flops_per_s"],
                                   baseline_usd_per_gpu_hour=base["usd_per_gpu_hour"]),
            unit="number", result=False, cites=T.relative_value, peak=(row["dense_flops_per_s"], "flops_per_s"),
            peak_base=(base["dense_flops_per_s"], "flops_per_s"), MFU=(row["mfu"], "fraction"),
            price=(row["usd_per_gpu_hour"], "usd_per_hour"), price_base=(base["usd_per_gpu_hour"], "usd_per_hour"))
        row["per_token_vs_baseline"] = r.step(
            f"{row['gpu']}: per_token_vs_baseline", "usd_per_M / usd_per_M_base",
            value=row["usd_per_million_tokens"] / base["usd_per_million_tokens"], unit="number", result=False)


def _in_catalog(key: str) -> bool:
    try:
        catalog.gpu(key)
    except UnknownName:
        return False
    return True


def _only_part(part: Report, key: str) -> Report:
    """The part's own steps, assumptions (renamed per part) and warnings, for merging."""
    out = Report(part.title)
    out.steps = [s for s in part.steps if s.name in ("tokens_per_gpu_s", "gpu_hours", "marginal_usd",
                                                    "usd_per_million_tokens.marginal")]
    out.assumptions = [Assumption(f"{key}: {a.name}" if a.name in ("mfu", "price", "dense_flops_per_s")
                                  else a.name, a.value,
                                  ("a guess" + a.note[len("not measured"):] if a.name == "mfu"
                                   and a.basis == "assumed" else a.note), a.unit, a.basis, a.source, a.replaced_by)
                       for a in part.assumptions if a.name not in ("pue",)]
    out.warnings = list(part.warnings)
    return out


def charts(report: Any) -> dict[str, dict]:
    from napkin.charts.train import compare_charts

    return compare_charts(report)


COMPARE = Calculator(
    "compare", CompareRequest, run_compare, "Compare accelerators",
    "Rank accelerators for one training job by cost per million tokens and delivered FLOP per dollar.",
    establishes="which part is cheapest per token at the MFUs and prices stated",
    needs_measuring="MFU of a short full-scale trial on each candidate; loaded prices",
    charts=charts,
)
