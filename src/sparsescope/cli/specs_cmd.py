"""``sparsescope specs [NAME]``: the GPU spec table, or one GPU's every figure with its source."""

from __future__ import annotations

import argparse
import dataclasses

from sparsescope.cli import add_json_flag

_COLUMNS = (  # header, field, format
    ("GPU", "name", "{}"),
    ("SMs", "sm_count", "{:d}"),
    ("warps/SM", "max_warps_per_sm", "{:d}"),
    ("BW GB/s", "peak_bw_gb_s", "{:,.0f}"),
    ("FP32 GFLOP/s", "fp32_peak_gflops", "{:,.0f}"),
    ("L2 MB", "l2_bytes", "{}"),
    ("latency ns", "dram_latency_ns", "{:.0f}"),
)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "specs", help="GPU spec table (datasheet figures and their sources)",
        description="Without NAME: every GPU in the table. With NAME (e.g. h200, "
                    "'NVIDIA A100-SXM4-80GB'): every figure of that GPU and where it comes from.")
    p.add_argument("name", nargs="?", metavar="NAME", help="GPU name (case-insensitive)")
    add_json_flag(p)
    p.set_defaults(handler=handle)


def _cell(spec, field: str, fmt: str) -> str:
    value = getattr(spec, field)
    if field == "l2_bytes":
        return f"{value / 2**20:g}"
    return fmt.format(value)


def _table(specs) -> str:
    rows = [[header for header, _, _ in _COLUMNS]]
    rows += [[_cell(s, field, fmt) for _, field, fmt in _COLUMNS] for s in specs]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    lines = []
    for row in rows:
        cells = [row[0].ljust(widths[0])]
        cells += [c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)]
        lines.append("  ".join(cells).rstrip())
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _detail(spec) -> tuple[dict, str]:
    fields = {}
    lines = [f"{spec.name} ({spec.vendor_name})"]
    names = [f.name for f in dataclasses.fields(spec) if f.name != "sources"]
    width = max(len(n) for n in names)
    for name in names:
        value = getattr(spec, name)
        source = spec.sources.get(name, "")
        fields[name] = {"value": value, "source": source}
        shown = f"{value:,}" if isinstance(value, (int, float)) else str(value)
        lines.append(f"  {name.ljust(width)}  {shown}" + (f"  [{source}]" if source else ""))
    return {"name": spec.name, "fields": fields}, "\n".join(lines)


def handle(args: argparse.Namespace) -> tuple[object, str]:
    from sparsescope import api

    if args.name:
        return _detail(api.gpu_specs(args.name)[0])
    specs = api.gpu_specs()
    result = {"gpus": [{k: v for k, v in dataclasses.asdict(s).items() if k != "sources"}
                       for s in specs]}
    return result, _table(specs)
