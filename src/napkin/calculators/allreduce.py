"""``napkin allreduce``: the bytes each rank sends in a ring all-reduce, and the time over one direction of a link."""

from __future__ import annotations

from typing import Annotated

import msgspec

from napkin import catalog
from napkin.calculators import Calculator
from napkin.calculators import replica as rep
from napkin.derivation import Report
from napkin.errors import InputError
from napkin.formulas import comm
from napkin.hardware import Accelerator
from napkin.request import field
from napkin.units import format as fmt

S = msgspec.Struct


class AllreduceRequest(S, kw_only=True, forbid_unknown_fields=True):
    size: Annotated[float, field("bytes", "buffer to all-reduce (e.g. the gradients)", gt=0)]
    ranks: Annotated[int, field("int", "ranks in the ring", ge=2)]
    link: Annotated[str | None, field("name", "GPU whose scale-up link to use (NVLink rating from the catalog)")] = None
    link_bandwidth: Annotated[float | None, field("bytes_per_s", "link bandwidth by hand", gt=0)] = None
    bidirectional: Annotated[bool, field("bool", "--link-bandwidth is a bidirectional rating (halved per direction)")] = False
    unidirectional: Annotated[bool, field("bool", "--link-bandwidth is per direction")] = False
    latency: Annotated[float, field("seconds", "per-step latency of the collective", ge=0)] = 0.0
    calibration: Annotated[str | None, field("path", "calibration from `napkin measure --collectives`: its measured "
                                                     "all-reduce bus bandwidth as the link")] = None


def run_allreduce(req: AllreduceRequest) -> Report:
    r = Report("Ring all-reduce", command="allreduce")
    if req.link_bandwidth is not None:
        if req.bidirectional == req.unidirectional:
            raise InputError("link_bandwidth", fmt(req.link_bandwidth, "bytes_per_s"), "needs its direction stated",
                             "add --bidirectional (a rating like NVLink's 900 GB/s) or --unidirectional")
        one_way = req.link_bandwidth / 2 if req.bidirectional else req.link_bandwidth
        if req.bidirectional:
            r.step("link_bytes_per_s_per_direction", "bidirectional rating / 2", value=one_way, unit="bytes_per_s",
                   rating=(req.link_bandwidth, "bytes_per_s"))
        else:
            r.set("link_bytes_per_s_per_direction", one_way, "bytes_per_s")
    elif req.calibration is not None:
        from napkin.calibration import load

        cal = load(req.calibration)
        hit = cal.allreduce_bus_at(req.size)
        if hit is None:
            raise InputError("calibration", req.calibration, "has no all-reduce figures",
                             "add them with `torchrun --nproc-per-node N -m napkin.measure --collectives --save FILE`")
        label, one_way = hit
        r.set("link_bytes_per_s_per_direction", one_way, "bytes_per_s")
        r.assume("link_bytes_per_s_per_direction", one_way, f"{cal.label}: all-reduce bus bandwidth at {label} "
                 f"{cal.allreduce_setup}; it includes that size's latency",
                 unit="bytes_per_s", basis="measured")
        if cal.allreduce_ranks and cal.allreduce_ranks != req.ranks:
            r.warn("calibration-ranks", f"the bus bandwidth was measured over {cal.allreduce_ranks} ranks, not "
                                        f"{req.ranks}; bus bandwidth changes with the group's size and the links it crosses")
        for code, message in cal.fit_warnings(uses="its all-reduce bandwidth"):
            r.warn(code, message)
    elif req.link is not None:
        g = catalog.gpu(req.link, "link")
        if g.link_bytes_per_s_bidirectional is None:
            raise InputError("link", req.link, "has no scale-up link in the catalog", "give --link-bandwidth")
        one_way = r.step("link_bytes_per_s_per_direction", "bidirectional rating / 2",
                         value=g.link_bytes_per_s_bidirectional / 2, unit="bytes_per_s",
                         rating=(g.link_bytes_per_s_bidirectional, "bytes_per_s"), link=g.link_name or g.name)
        r.set("scale_up_domain", g.scale_up_domain, "count")
        if req.ranks > g.scale_up_domain:
            warn_beyond_scale_up(r, g, req.ranks, one_way)
    else:
        raise InputError("link", "nothing", "is required", "give --link GPU or --link-bandwidth X --bidirectional")
    per_rank = r.step("bytes_per_rank", "2 · (n − 1) / n · buffer",
                      value=comm.ring_allreduce_bytes_per_rank(req.size, n_ranks=req.ranks), unit="bytes",
                      n=req.ranks, buffer=(req.size, "bytes"), cites=comm.ring_allreduce_bytes_per_rank)
    r.step("seconds", "bytes_per_rank / one-direction bandwidth + 2 · (n − 1) · latency",
           value=comm.allreduce_seconds(per_rank, link_bytes_per_s_per_direction=one_way, n_ranks=req.ranks,
                                        latency_s=req.latency),
           unit="seconds", bandwidth=(one_way, "bytes_per_s"), latency=(req.latency, "seconds"),
           cites=comm.allreduce_seconds)
    if req.link is not None and req.link_bandwidth is None and req.calibration is None:
        measured(r, catalog.gpu(req.link, "link"), req)
    r.note("each rank sends bytes_per_rank and receives as many; the volume per rank tends to 2 × buffer and "
           "does not shrink with more ranks")
    if req.latency == 0:
        r.assume("latency", 0.0, "no per-step latency: bandwidth only (a floor)", unit="seconds")
    return r


def measured(r: Report, g: Accelerator, req: AllreduceRequest) -> None:
    """Beside the floor, what the GPU family's published all-reduce sweep measured at this size, where one is
    published, the ring stays on the link, and g is on the kind of board the sweep ran on (an 8-GPU NVSwitch board
    at the family's fastest link). `napkin serve` reads the same sweep, held at or above the link's large-message
    rate, and takes a one-shot kernel where that is faster."""
    from napkin.catalog import efficiency as eff

    fam = eff.family(g.key)
    if not fam.allreduce_curve_busbw or req.ranks > g.scale_up_domain:
        return
    if not rep.on_sweep_board(g):
        board = rep.sweep_board_link(fam.key)
        r.note(f"no measured_seconds: the {fam.key} family's published sweep ({fam.allreduce_curve_label}) ran on an "
               f"8-GPU NVSwitch board at {fmt(board / 2, 'bytes_per_s')} each way; the {g.name}'s "
               f"{g.link_name or 'link'} ({fmt(g.link_bytes_per_s_bidirectional / 2, 'bytes_per_s')} each way, "
               f"{g.scale_up_domain} GPUs) is not that board")
        return
    curve = comm.padded_curve(fam.allreduce_curve_busbw)
    t = r.step("measured_seconds", "the family's published sweep at this size: 2(n − 1)/n · buffer / busbw(buffer), "
               "busbw between the measured sizes as the time runs linearly", unit="seconds",
               value=float(comm.measured_ring_seconds(float(req.size), n_ranks=float(req.ranks), curve=curve)),
               n=req.ranks, cites=comm.measured_ring_seconds)
    ratio = t / r["seconds"] if r["seconds"] > 0 else float("inf")
    why = ("the ring's per-chunk latencies dominate below a few hundred MiB" if ratio >= 1 else
           "NCCL reduces in the NVSwitch (NVLink SHARP) at large sizes, which the ring's formula does not count")
    r.note(f"measured_seconds: what the {fam.key} family's published sweep took at this size "
           f"({fam.allreduce_curve_label}), {ratio:.2g}x the floor: {why}")


# One 400 Gb/s NIC per GPU (ConnectX-7 on an HGX H100 node): 50 GB/s each way, as serving prices TP across nodes.
NIC_EXAMPLE_BYTES_PER_S = catalog.default_value("scale_out_bytes_per_s_per_gpu")


def warn_beyond_scale_up(r: Report, g: Accelerator, ranks: int, one_way: float) -> None:
    """A ring over more ranks than share the scale-up link runs at the slowest link it crosses."""
    d = g.scale_up_domain
    link = g.link_name or "scale-up link"
    if d == 1:
        r.warn("beyond-scale-up-domain",
               f"the {g.name} has no scale-up link: the {ranks} ranks' ring crosses {link} at "
               f"{fmt(one_way, 'bytes_per_s')} per direction (the figure used here) inside a server, and the "
               f"scale-out NIC between servers, whichever is slower (a 400 Gb/s NIC is "
               f"{fmt(NIC_EXAMPLE_BYTES_PER_S, 'bytes_per_s')} each way); give the slowest with --link-bandwidth X "
               f"--unidirectional")
        return
    host = g.host_link_bytes_per_s_per_direction
    if host is not None and ranks <= (g.host_link_domain or 0):
        r.warn("beyond-scale-up-domain",
               f"{ranks} ranks exceed the {g.name}'s scale-up domain of {d} GPUs ({link}, "
               f"{fmt(one_way, 'bytes_per_s')} per direction): the cards of one server beyond it are reached over PCIe, "
               f"{fmt(host, 'bytes_per_s')} each way, and a ring runs at its slowest link: --link-bandwidth "
               f"{fmt(host, 'bytes_per_s').replace(' ', '')} --unidirectional")
        return
    if g.vendor == "Google":
        slow = ("the data-center network (DCN) between slices, far slower than ICI; give its per-chip rate with "
                "--link-bandwidth X --unidirectional")
    else:
        slow = (f"the scale-out NIC or PCIe (one 400 Gb/s NIC per GPU is {fmt(NIC_EXAMPLE_BYTES_PER_S, 'bytes_per_s')} "
                f"each way, {one_way / NIC_EXAMPLE_BYTES_PER_S:.0f}x below the {fmt(one_way, 'bytes_per_s')} used here: "
                f"--link-bandwidth {fmt(NIC_EXAMPLE_BYTES_PER_S, 'bytes_per_s').replace(' ', '')} --unidirectional)")
    r.warn("beyond-scale-up-domain",
           f"{ranks} ranks exceed the {g.name}'s scale-up domain of {d} {'chips' if g.vendor == 'Google' else 'GPUs'} "
           f"({link}, "
           f"{fmt(one_way, 'bytes_per_s')} per direction): a ring over more ranks runs at its slowest link, {slow}")


ALLREDUCE = Calculator("allreduce", AllreduceRequest, run_allreduce, "All-reduce",
                       "Ring all-reduce bytes per rank and time over one direction of a link.",
                       establishes="the bandwidth floor of a ring all-reduce",
                       needs_measuring="achieved bus bandwidth, from nccl-tests or `napkin measure --collectives`")
