"""``sparsescope model``: Little's law, latency sensitivity and DAE for a GPU, and one case."""

from __future__ import annotations

import argparse
import math
from dataclasses import asdict

from sparsescope.cli import add_json_flag
from sparsescope.errors import UsageError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "model", help="first-principles SpMV model for a GPU (and one case)",
        description="Little's-law, latency-sensitivity and DAE figures for a GPU from the spec "
                    "table; with --rows/--cols/--nnz/--time-ms also one case's bytes, floor, "
                    "effective bandwidth, % of peak and gap.")
    p.add_argument("--gpu", default="H200", help="GPU name from `sparsescope specs` (default H200)")
    p.add_argument("--latency-ns", type=float, help="DRAM latency (default: the spec's estimate)")
    p.add_argument("--bw-gb-s", type=float,
                   help="judge against this bandwidth instead of the datasheet peak "
                        "(e.g. a measured copy bandwidth)")
    case = p.add_argument_group("one case")
    case.add_argument("--rows", type=int)
    case.add_argument("--cols", type=int, help="default: --rows")
    case.add_argument("--nnz", type=int)
    case.add_argument("--time-ms", type=float, help="measured time of one SpMV")
    case.add_argument("--index-bytes", type=int, choices=(4, 8), default=4)
    case.add_argument("--value-bytes", type=int, choices=(4, 8), default=4)
    case.add_argument("--no-y-read", action="store_true",
                      help="the kernel writes y without reading it (default: y read + written)")
    prof = p.add_argument_group("CPI-based DAE (from an ncu profile)")
    prof.add_argument("--cpi", type=float, help="cycles per issued instruction")
    prof.add_argument("--long-scoreboard", type=float,
                      help="Long Scoreboard stall cycles per issued instruction")
    add_json_flag(p)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> tuple[dict, str]:
    from sparsescope import model
    from sparsescope.hardware.specs import get_spec

    spec = get_spec(args.gpu)
    latency = args.latency_ns if args.latency_ns is not None else spec.dram_latency_ns
    bw = args.bw_gb_s if args.bw_gb_s is not None else spec.peak_bw_gb_s
    if not (0 < latency < math.inf and 0 < bw < math.inf):  # NaN fails both comparisons
        raise UsageError(f"--latency-ns and --bw-gb-s must be finite and > 0, got {latency} "
                         f"and {bw}")
    ll = model.littles_law(bw, latency, spec.sm_count, spec.max_warps_per_sm)
    result: dict = {
        "gpu": spec.name, "bw_gb_s": bw, "latency_ns": latency,
        "littles_law": {**asdict(ll), "bw_ceiling_gb_s": ll.bw_ceiling_gb_s,
                        "dep_chain_ceiling_gb_s": ll.dep_chain_ceiling_gb_s},
        "roofline": {"ridge_flop_per_byte": model.ridge_point(spec.fp32_peak_gflops, bw),
                     "fp32_peak_gflops": spec.fp32_peak_gflops},
    }
    case_given = [a is not None for a in (args.rows, args.nnz, args.time_ms)]
    if any(case_given) and not all(case_given):
        raise UsageError("a case needs --rows, --nnz and --time-ms (and optionally --cols)")
    current_pct = None
    if all(case_given):
        if min(args.rows, args.nnz) < 0 or not 0 < args.time_ms < math.inf:
            raise UsageError("--rows and --nnz must be >= 0 and --time-ms finite and > 0")
        cols = args.cols if args.cols is not None else args.rows
        traffic = model.spmv_traffic(args.rows, cols, args.nnz, value_bytes=args.value_bytes,
                                     index_bytes=args.index_bytes, y_read=not args.no_y_read)
        metrics = model.case_metrics(traffic, args.time_ms, bw)
        gap = model.gap_decomposition(args.time_ms, metrics.floor_ms, ll.bw_ceiling_pct)
        current_pct = metrics.pct_peak
        result["case"] = {**asdict(metrics), "index_bytes": args.index_bytes,
                          "y_read": not args.no_y_read,
                          "gap_decomposition": asdict(gap),
                          "index_width": asdict(model.index_width_row(
                              "case", args.rows, cols, args.nnz, value_bytes=args.value_bytes,
                              y_read=not args.no_y_read))}
    latencies = sorted({200.0, 300.0, 400.0, float(latency)})
    result["sensitivity"] = [asdict(r) for r in model.latency_sensitivity(
        bw, spec.sm_count, spec.max_warps_per_sm, latencies, current_pct=current_pct)]
    dae: dict = {
        "min_fifo_depth": model.min_fifo_depth(ll.warps_per_sm_required, spec.max_warps_per_sm),
        "fifo_depth": [asdict(r) for r in model.fifo_depth_table(
            ll.warps_per_sm_required, spec.max_warps_per_sm)],
        "sram_cost": [asdict(r) for r in model.sram_cost_table(
            spec.sm_count, spec.max_warps_per_sm, spec.registers_per_sm)],
    }
    if current_pct is not None:
        dae["bw_prediction"] = asdict(model.dae_bw_prediction(current_pct, ll.bw_ceiling_pct))
    if args.cpi is not None or args.long_scoreboard is not None:
        if args.cpi is None or args.long_scoreboard is None:
            raise UsageError("the CPI-based prediction needs both --cpi and --long-scoreboard")
        try:
            dae["cpi_prediction"] = asdict(model.dae_cpi_prediction(args.cpi, args.long_scoreboard))
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
    result["dae"] = dae
    return result, _text(result)


def _text(r: dict) -> str:
    ll = r["littles_law"]
    lines = [
        f"{r['gpu']}: {r['bw_gb_s']:,.0f} GB/s, {r['latency_ns']:.0f} ns DRAM latency",
        f"  Little's law: {ll['outstanding_bytes'] / 1e6:.2f} MB in flight, "
        f"{ll['warps_per_sm_required']:.1f} warps/SM required, {ll['max_warps_per_sm']} available",
        f"  bandwidth ceiling {ll['bw_ceiling_pct']:.1f}% ({ll['bw_ceiling_gb_s']:,.0f} GB/s); "
        f"with the dependent-load chain {ll['dep_chain_ceiling_pct']:.1f}% "
        f"({ll['dep_chain_ceiling_gb_s']:,.0f} GB/s)",
        f"  ridge point {r['roofline']['ridge_flop_per_byte']:.1f} FLOP/byte",
        "  latency   req warps/SM   LL ceiling   dep-chain   DAE(depth 2)",
    ]
    for s in r["sensitivity"]:
        lines.append(f"  {s['latency_ns']:5.0f} ns   {s['warps_per_sm_required']:12.1f}"
                     f"   {s['bw_ceiling_pct']:9.1f}%   {s['dep_chain_ceiling_pct']:8.1f}%"
                     f"   {s['dae_ceiling_pct']:11.1f}%")
    lines.append(f"  DAE: minimum FIFO depth {r['dae']['min_fifo_depth']}")
    if "case" in r:
        c = r["case"]
        lines += [
            f"case: {c['bytes'] / 1e6:,.1f} MB, floor {c['floor_ms']:.4f} ms, "
            f"measured {c['time_ms']:.4f} ms",
            f"  {c['eff_bw_gb_s']:,.0f} GB/s = {c['pct_peak']:.1f}% of {c['bw_gb_s']:,.0f} GB/s, "
            f"gap {c['gap']:.2f}x, {c['gflops']:,.0f} GFLOP/s, AI {c['arithmetic_intensity']:.3f}",
        ]
        if "bw_prediction" in r["dae"]:
            d = r["dae"]["bw_prediction"]
            lines.append(f"  DAE (BW-based): {d['current_pct']:.1f}% -> {d['predicted_pct']:.1f}%, "
                         f"{d['speedup']:.2f}x")
    if "cpi_prediction" in r["dae"]:
        d = r["dae"]["cpi_prediction"]
        lines.append(f"  DAE (CPI-based): CPI {d['cpi']:.2f} -> {d['projected_cpi']:.2f}, "
                     f"{d['speedup']:.2f}x")
    return "\n".join(lines)
