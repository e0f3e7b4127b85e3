"""``sparsescope sass FILE``: SASS analysis of the kernels in a binary, listing or ``.cu`` file."""

from __future__ import annotations

import argparse

from sparsescope.cli import add_json_flag


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "sass", help="analyse the SASS of CUDA kernels (resources, mix, loops, load chains)",
        description="Analyse the SASS of every kernel in a cubin, fatbin, object, executable, "
                    "shared library, saved listing (cuobjdump -sass, nvdisasm, nvdisasm -json) "
                    "or .cu file (compiled here for --arch).")
    p.add_argument("file", help="CUDA binary, SASS listing, or .cu source")
    p.add_argument("--kernel", metavar="REGEX",
                   help="only kernels whose mangled or demangled name matches")
    p.add_argument("--arch", metavar="SM",
                   help="architecture to disassemble or compile for (e.g. sm_90; a .cu "
                        "file defaults to sm_90)")
    p.add_argument("--source", metavar="CU", help="CUDA source of the kernels, for parameter names")
    p.add_argument("--param-names", metavar="A,B,...",
                   help="comma-separated kernel parameter names, in order "
                        "(e.g. n,row_ptr,col,val,x,y)")
    p.add_argument("--stalls", metavar="CSV",
                   help="ncu --page source --print-source sass --csv export to map stall samples")
    p.add_argument("--block-size", type=int, metavar="N",
                   help="threads per block, for the theoretical occupancy")
    p.add_argument("--dynamic-shared", type=int, default=0, metavar="BYTES",
                   help="dynamic shared memory per block, for the occupancy (default 0)")
    p.add_argument("--gpu", metavar="NAME",
                   help="GPU from the spec table for the occupancy (default: the kernel's arch)")
    p.add_argument("--list", action="store_true",
                   help="only list the kernels (name, demangled name, arch, registers)")
    add_json_flag(p)
    p.set_defaults(handler=_handle)


def _list(args: argparse.Namespace) -> tuple[dict, str]:
    from sparsescope import api

    entries = api.list_kernels(args.file, arch=args.arch, kernel=args.kernel)
    rows = [{"name": e.name, "demangled": e.demangled, "arch": e.arch,
             "registers": e.resources.registers if e.resources else None,
             "shared_bytes": e.resources.shared_bytes if e.resources else None}
            for e in entries]

    def regs(r: dict) -> str:
        return "-" if r["registers"] is None else str(r["registers"])

    text = "\n".join(f"{r['arch'] or '?':7} {regs(r):>4}  {r['demangled']}" for r in rows)
    return {"file": str(args.file), "kernels": rows}, text or "no kernel"


def _handle(args: argparse.Namespace) -> tuple[dict, str]:
    from sparsescope import api

    if args.list:
        return _list(args)
    names = [n.strip() for n in args.param_names.split(",")] if args.param_names else None
    kernels = api.sass_analysis(args.file, kernel=args.kernel, arch=args.arch,
                                source=args.source, param_names=names, stalls=args.stalls,
                                block_size=args.block_size, dynamic_shared=args.dynamic_shared,
                                gpu=args.gpu)
    result = {"file": str(args.file), "kernels": []}
    texts = []
    for found in kernels:
        k, occ = found.analysis, found.occupancy
        entry = k.to_dict()
        if occ is not None:
            entry["occupancy"] = {
                "block_threads": occ.block_threads, "occupancy_pct": occ.occupancy_pct,
                "active_warps_per_sm": occ.active_warps_per_sm, "limiter": occ.limiter,
                "limit_blocks": {"registers": occ.limit_registers_blocks,
                                 "shared": occ.limit_shared_blocks,
                                 "warps": occ.limit_warps_blocks, "blocks": occ.limit_blocks}}
        why = found.occupancy_reason
        if why:
            entry["occupancy"], entry["occupancy_reason"] = None, why
        result["kernels"].append(entry)
        texts.append(api.sass_markdown(k, occupancy=occ, occupancy_reason=why))
    return result, "\n".join(texts)
