"""`napkin check`, step by step: the claim, GPU-hours from GPUs × days, 6·N·D, and each verdict."""

from __future__ import annotations

from napkin import catalog
from napkin.calculators.check.readings import price_note
from napkin.calculators.check.request import AGREE_WITHIN, OMITTED, CheckRequest
from napkin.calculators.check.verdicts import mfu_verdict, usd_alone, usd_for_hours, worst
from napkin.calculators.resolve import assume_default, given_or_default, warn_if_stale_price
from napkin.derivation import Report
from napkin.errors import InputError, NapkinError
from napkin.formulas import economics as econ
from napkin.formulas import flops as fl
from napkin.formulas import training as T
from napkin.hardware import Accelerator
from napkin.request import basis_of
from napkin.units import DAY, format as fmt


def run_check(req: CheckRequest) -> Report:
    r = Report("Check", command="check")
    checks: list[tuple[str, str]] = []
    listed: list[str] = []  # the assumptions the verdict rests on, in words
    n, d = _claim(r, req)
    span_hours = _span(r, req, checks, listed)
    if n is None:
        if span_hours is None or req.claimed_gpu_hours is None:
            raise InputError("params", "nothing", "is required to check a cost",
                             "give --params N and --tokens D, or --gpus N --days N --claimed-gpu-hours H")
        if req.claimed_usd is not None:
            raise InputError("params", "nothing", "is required to check --claimed-usd",
                             "give --params N and --tokens D")
    else:
        _against_6nd(r, req, n, d, span_hours, checks, listed)
    if not checks:
        raise InputError("claimed_usd", "nothing", "is required: there is no claim to check",
                         "give --claimed-usd, --claimed-gpu-hours, or --gpus and --days")
    verdict, reason = worst(checks)
    r.set("verdict", verdict)
    r.set("verdict_reason", reason)
    r.set("verdict_assumptions", listed)
    r.set("omitted", list(OMITTED))
    r.title = _title(n, d, req)
    return r


def _claim(r: Report, req: CheckRequest) -> tuple[float | None, float | None]:
    """N and D of the run (given, or the catalog model's), and the claim, recorded."""
    n = None
    if req.params is not None:
        n = req.params
        if req.model is not None:  # still a name that must exist: a typo is not silently ignored
            given = catalog.model(req.model)
            r.note(f"--params {fmt(n, 'count')} replaces {given.name}'s {fmt(given.active_params, 'count')} "
                   f"{'active ' if given.is_moe else ''}parameters")
    elif req.model is not None:
        m = catalog.model(req.model)
        n = m.active_params
        if m.is_moe:
            r.note(f"{m.name} is a mixture of experts: 6·N·D uses its {fmt(n, 'count')} active parameters, "
                   f"not its {fmt(m.params, 'count')} total")
    d = req.tokens
    if d is None and req.model is not None and n is not None:
        d = catalog.model(req.model).training_tokens or None
        if d:
            r.assume("tokens", d, "the catalog model's published training tokens", unit="count", basis="catalog")
    if (n is None) != (d is None):
        raise InputError("tokens" if d is None else "params", "nothing", "is required",
                         "give both --params N (or --model) and --tokens D")
    if (req.gpus is None) != (req.days is None):
        missing = "days" if req.days is None else "gpus"
        raise InputError(missing, "nothing", "is required with --" + ("gpus" if missing == "days" else "days"),
                         "give both --gpus N and --days N")
    if n is not None:
        r.set("params", n, "count")
        r.set("tokens", d, "count")
    if req.claimed_usd is not None:
        r.set("claimed_usd", req.claimed_usd, "usd")
    if req.claimed_gpu_hours is not None:
        r.set("claimed_gpu_hours", req.claimed_gpu_hours, "count")
    return n, d


def _span(r: Report, req: CheckRequest, checks: list[tuple[str, str]], listed: list[str]) -> float | None:
    """GPU-hours from GPUs × days, and their agreement with a claimed GPU-hours figure."""
    span_hours = None
    if req.gpus is not None and req.days is not None:
        r.set("gpus", req.gpus, "count")
        r.set("wall_s", req.days * DAY, "seconds")
        span_hours = r.step("gpu_hours_from_span", "GPUs · days · 24 h",
                            value=econ.gpu_hours_from_span(req.gpus, seconds=req.days * DAY), unit="count",
                            GPUs=req.gpus, days=req.days, cites=econ.gpu_hours_from_span)
        listed.append(f"{req.gpus:,} GPUs allocated for all {req.days:g} days")
    if span_hours is not None and req.claimed_gpu_hours is not None:
        ratio = r.step("claimed_over_span", "claimed_gpu_hours / gpu_hours_from_span",
                       value=req.claimed_gpu_hours / span_hours, unit="number",
                       claimed_gpu_hours=(req.claimed_gpu_hours, "count"), gpu_hours_from_span=(span_hours, "count"))
        agree = abs(ratio - 1.0) <= AGREE_WITHIN
        r.set("gpu_hours_agree", agree)
        listed.append(f"agreement within {AGREE_WITHIN:.0%}")
        if agree:
            checks.append(("consistent", f"the claimed GPU-hours are {ratio:.2f}× GPUs × days"))
        elif ratio > 1:
            checks.append(("inconsistent",
                           f"the claimed GPU-hours are {ratio:.2f}× what {req.gpus:,} GPUs supply in {req.days:g} "
                           "days: the two figures cannot describe the same span of one run (the run was longer, "
                           "or used more GPUs, than stated)"))
        else:
            checks.append(("consistent",
                           f"the claimed GPU-hours are {ratio:.2f}× GPUs × days: possible if GPUs sat idle or "
                           "the run took part of the span"))
    return span_hours


def _against_6nd(r: Report, req: CheckRequest, n: float, d: float, span_hours: float | None,
                 checks: list[tuple[str, str]], listed: list[str]) -> None:
    """6·N·D on the chosen part at the MFU, goodput and price, and each claim held against it."""
    g = catalog.gpu(req.gpu or catalog.default_value("default_gpu"))
    fastest = None
    if req.gpu is None and req.claimed_gpu_hours is not None and req.claimed_usd is None and span_hours is None:
        fastest = _fastest(req.precision)  # hours on an unnamed part: read them on the fastest, as generous
    if fastest is not None:
        g = fastest
        r.assume("gpu", g.key, f"no --gpu: the catalog's highest dense {req.precision} peak, the reading most generous "
                 "to claimed GPU-hours (give --gpu for the part the run used)")
    elif req.gpu is None:
        assume_default(r, "gpu", "default_gpu")
    r.set("gpu", g.key)
    _precision(r, req, g)
    c = r.step("train_flops", "6 · N · D", value=fl.train_flops(n, n_tokens=d), unit="flops",
               N=(n, "count"), D=(d, "count"), cites=fl.train_flops)
    peak = g.peak(req.precision)
    r.assume("dense_flops_per_s", peak, f"{g.name} dense {req.precision} peak ({g.source})",
             unit="flops_per_s", basis="catalog")
    if req.mfu is None:
        mfu = assume_default(r, "mfu", "reference_mfu", basis="reference")
    else:
        mfu = r.assume("mfu", req.mfu, "given", unit="fraction", basis="given")
    goodput = given_or_default(r, "goodput", req.goodput, "claim_goodput")
    if req.goodput is not None:
        listed.append(f"goodput {fmt(goodput, 'fraction')}")
    if goodput == 1.0:
        listed.append("every paid hour productive (goodput 1)")
    price = req.price
    if price is None:
        ref = catalog.gpu_hour_price(g.key)
        if ref is not None:
            price = ref.usd_per_gpu_hour
            r.assume("price", price, price_note(g.key, ref), unit="usd_per_hour", basis="catalog")
            warn_if_stale_price(r, ref, f"the {g.name}")
    else:
        r.assume("price", price, "given", unit="usd_per_hour", basis="given")

    gh = r.step("gpu_hours_at_mfu", "C / (peak · MFU · goodput · 3600 s/h)",
                value=econ.gpu_hours_for_flops(c, dense_flops_per_s=peak, mfu=mfu, goodput=goodput),
                unit="count", C=(c, "flops"), peak=(peak, "flops_per_s"), MFU=mfu, goodput=goodput,
                cites=econ.gpu_hours_for_flops)
    if price is not None:
        r.step("compute_usd", "gpu_hours_at_mfu · price", value=T.marginal_usd(gh, usd_per_gpu_hour=price),
               unit="usd", price=(price, "usd_per_hour"), cites=T.marginal_usd)
    hours = req.claimed_gpu_hours if req.claimed_gpu_hours is not None else span_hours
    if hours is not None:
        _hours_claim(r, req, g, c=c, peak=peak, goodput=goodput, price=price, hours=hours, checks=checks,
                     listed=listed, on_fastest=fastest is not None)
    elif req.claimed_usd is not None:
        r.step("implied_usd_per_gpu_hour", "claimed_usd / gpu_hours_at_mfu",
               value=econ.implied_usd_per_gpu_hour(req.claimed_usd, gpu_hours=gh), unit="usd_per_hour",
               claimed_usd=(req.claimed_usd, "usd"), MFU=mfu, cites=econ.implied_usd_per_gpu_hour)
        checks.append(usd_alone(r, req, g, c=c, peak=peak, price=price, mfu=mfu, goodput=goodput, listed=listed))


def _fastest(precision: str) -> Accelerator | None:
    """The catalog part with the highest dense peak at ``precision`` (None if none has one)."""
    best: tuple[float, str] | None = None
    for key, g in catalog.gpus().items():
        try:
            peak = g.peak(precision)
        except NapkinError:
            continue
        if peak and (best is None or peak > best[0]):
            best = (peak, key)
    return catalog.gpu(best[1]) if best else None


def _hours_claim(r: Report, req: CheckRequest, g: Accelerator, *, c: float, peak: float, goodput: float,
                 price: float | None, hours: float, checks: list[tuple[str, str]], listed: list[str],
                 on_fastest: bool = False) -> None:
    """Claimed GPU-hours (or GPUs × days): the MFU they imply, and a claimed cost beside what they cost."""
    listed.insert(0, f"{g.name} dense {req.precision} peak {fmt(peak, 'flops_per_s')}")
    source = "claimed_gpu_hours" if req.claimed_gpu_hours is not None else "gpu_hours_from_span"
    what = "the claimed GPU-hours need" if req.claimed_gpu_hours is not None else "GPUs × days need"
    imfu = r.step("implied_mfu", f"C / ({source} · 3600 s/h · peak · goodput)",
                  value=econ.implied_mfu(c, gpu_hours=hours, dense_flops_per_s=peak, goodput=goodput),
                  unit="fraction", C=(c, "flops"), gpu_hours=(hours, "count"), peak=(peak, "flops_per_s"),
                  goodput=goodput, cites=econ.implied_mfu)
    checks.append(mfu_verdict(imfu, what=what, basis=f"on {g.name} at {req.precision}"))
    if imfu < 0.2 and on_fastest:  # low because napkin chose the fastest part, not because of the claim
        r.note(f"implied MFU {fmt(imfu, 'fraction')} is on the {g.name}, the fastest part napkin knows: on the "
               "part the run used it is higher; give --gpu to read the claim there")
    elif imfu < 0.2:
        r.note(f"implied MFU {fmt(imfu, 'fraction')} is low: the hours cover more than this run's 6·N·D "
               "(other runs, idle capacity, long restarts) or the run was inefficient")
    implied_usd = None
    if price is not None:
        implied_usd = r.step("implied_usd", f"{source} · price", value=T.marginal_usd(hours, usd_per_gpu_hour=price),
                             unit="usd", price=(price, "usd_per_hour"), cites=T.marginal_usd)
    if req.precision in ("bf16", "fp16") and g.supports("fp8") and basis_of(req, "precision") == "given":
        r.note(f"MFU against the {req.precision} peak; a run that computed in fp8 has twice the peak and "
               "half this MFU (--precision fp8)")
    if req.claimed_usd is not None:
        r.step("implied_usd_per_gpu_hour", f"claimed_usd / {source}",
               value=econ.implied_usd_per_gpu_hour(req.claimed_usd, gpu_hours=hours), unit="usd_per_hour",
               cites=econ.implied_usd_per_gpu_hour)
        hours_what = ("the claimed GPU-hours" if req.claimed_gpu_hours is not None
                      else f"{req.gpus:,} GPUs for {req.days:g} days")
        check = usd_for_hours(r, req, g, hours=hours, hours_what=hours_what, price=price,
                              implied_usd=implied_usd, listed=listed)
        if check is not None:
            checks.append(check)


def _precision(r: Report, req: CheckRequest, g: Accelerator) -> None:
    """The precision whose dense peak the claim is read at: given, or bf16 assumed (and said so).

    Trap: a run that trained in fp8 (DeepSeek-V3 did) has twice the bf16 peak, so the same
    claim needs half the MFU: the verdict can flip on the precision alone.
    """
    r.set("precision", req.precision)
    if basis_of(req, "precision") == "given":
        r.assume("precision", req.precision, "given", basis="given")
        return
    r.assume("precision", req.precision, "the dense peak is read at bf16, the precision most large runs train at; "
             "a run in fp8 has twice the peak (--precision fp8)", basis="assumed")
    if g.supports("fp8"):
        r.note(f"precision bf16 assumed: a run that computed in fp8 (DeepSeek-V3 did) has the {g.name}'s fp8 peak, "
               f"{fmt(g.peak('fp8'), 'flops_per_s')} against {fmt(g.peak('bf16'), 'flops_per_s')}, and needs half "
               "the MFU; `--precision fp8` reads the claim at it")


def _title(n: float | None, d: float | None, req: CheckRequest) -> str:
    parts = []
    if n is not None and d is not None:
        parts.append(f"{fmt(n, 'count')} params on {fmt(d, 'count')} tokens")
    if req.gpus is not None and req.days is not None:
        parts.append(f"{req.gpus:,} GPUs for {req.days:g} days")
    claims = []
    if req.claimed_usd is not None:
        claims.append(fmt(req.claimed_usd, "usd"))
    if req.claimed_gpu_hours is not None:
        claims.append(f"{fmt(req.claimed_gpu_hours, 'count')} GPU-hours")
    head = "Check: " + ", ".join(parts)
    return head + (f"; claimed {' and '.join(claims)}" if claims else "")

