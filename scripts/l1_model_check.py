"""The x-gather model's L2 requests against ncu, with and without the L1 across an SM's blocks.

For every profiled tile-kernel case (``spmv_tile``, the nonzero split of cuda-spmv-adaptive) in
the given profile folders (``results/<gpu>/profile/...``, the raw exports ``*_raw.csv.gz``),
the matrix is generated again (seed6 or the population suite, seed 0, scale 1) and its x
requests to the L2 are modelled under the launch ncu read (grid, resident blocks, the L1 its
shared-memory carveout left) and compared with what ncu counted::

    ncu x sectors = L2 read sectors from the SMs (lts__t_sectors_srcunit_tex_op_read)
                    - the streams (4-byte values and INT32 columns, 4-byte row pointers)
                    - the hub's fill (x[0, hub) into every block's shared memory, where the
                      kernel has a hub; once an SM: its later blocks find the sectors in L1,
                      ncu's L1 hits on webbase-1M, 0.59 M, are most of its 0.68 M fill loads)

Columns: the requests one per distinct sector of a warp instruction (no L1); the model before
the L1 capacity (a block's x sectors kept in L1 for its life, without limit); the L1 model at
the L1 ncu read; and at the L1 the model assumes without a profile (the smallest carveout that
holds the resident blocks' shared memory). No GPU is needed::

    python scripts/l1_model_check.py results/h200/profile/2026-11-25-cases-hub8k ... \\
        [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from sparsescope.errors import UnknownNameError  # noqa: E402
from sparsescope.hardware.specs import UNIFIED_L1_SHARED_KIB, get_spec  # noqa: E402
from sparsescope.matrices.suites import build_entry, find_entry  # noqa: E402
from sparsescope.model.l1_cache import L1Cache, l1_data_bytes  # noqa: E402
from sparsescope.model.xgather import x_gather  # noqa: E402
from sparsescope.profile.read_csv import read_raw_rows  # noqa: E402

KB = 1024
PROFILED = get_spec("H200")  # the GPU of the profiles read here
UNIFIED = UNIFIED_L1_SHARED_KIB[PROFILED.compute_capability] * KB
SMS = PROFILED.sm_count
STATIC_SHARED = "launch__shared_mem_per_block_static"


def _matrix(name: str):
    for suite in ("seed6", "population"):
        try:
            return build_entry(find_entry(suite, name)).csr
        except UnknownNameError:
            continue
    raise SystemExit(f"{name}: in neither the seed6 nor the population suite")


def _number(row: dict[str, str], key: str) -> float:
    return float(row[key].replace(",", ""))


def check_case(raw: Path) -> dict | None:
    """The case's row of the table, or None when its export holds no tile kernel."""
    case = raw.name.removesuffix("_raw.csv.gz")
    row = next((r for r in read_raw_rows(raw) if r["Kernel Name"].startswith("void spmv_tile")),
               None)
    if row is None:
        return None
    hub = int(m.group(1)) if (m := re.search(r"hub=(\d+)", case)) else 0
    a = _matrix(case.split(".")[0])
    grid = int(_number(row, "launch__grid_size"))
    resident = int(min(_number(row, "launch__occupancy_limit_registers"),
                       _number(row, "launch__occupancy_limit_shared_mem")))
    l1_ncu = UNIFIED - int(_number(row, "launch__shared_mem_config_size"))
    l1_rule = l1_data_bytes(PROFILED.compute_capability, int(_number(row, STATIC_SHARED)),
                             resident)[0]
    per_block = -(-a.nnz // grid)
    streams = (8 * a.nnz + 4 * (a.shape[0] + 1) + min(grid, SMS) * hub * 4) / 32
    measured = _number(row, "lts__t_sectors_srcunit_tex_op_read.sum") - streams
    kw = dict(cols=a.shape[1], l2_bytes=60 << 20, stream_bytes_per_nnz=0.0, threads_per_row=0,
              onchip_entries=hub)
    plain = x_gather(a.indptr, a.indices, **kw).l2_requests
    unlimited = x_gather(a.indptr, a.indices, l1_block=per_block, **kw).l2_requests
    at_ncu = x_gather(a.indptr, a.indices, l1=(L1Cache(l1_ncu, SMS, resident), per_block),
                      **kw).l2_requests
    at_rule = x_gather(a.indptr, a.indices, l1=(L1Cache(l1_rule, SMS, resident), per_block),
                       **kw).l2_requests
    return dict(case=case, nnz=int(a.nnz), grid=grid, resident=resident, l1_ncu_kb=l1_ncu // KB,
                l1_rule_kb=l1_rule // KB, ncu_x_sectors=measured, per_instruction=plain,
                block_unlimited=unlimited, l1_model_at_ncu=at_ncu, l1_model_at_rule=at_rule)


def _err(model: float, measured: float) -> str:
    return f"{100 * (model / measured - 1):+.0f} %" if measured > 0 else "n/a"


def table(rows: list[dict]) -> str:
    out = ["| case | nnz | grid | resident | L1 ncu / rule KB | ncu x sectors | per instruction "
           "| before: block, no limit | L1 model at ncu's L1 | at the rule's L1 |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        m = r["ncu_x_sectors"]
        out.append(
            f"| {r['case']} | {r['nnz']:,} | {r['grid']:,} | {r['resident']} | "
            f"{r['l1_ncu_kb']} / {r['l1_rule_kb']} | {m:,.0f} | "
            f"{r['per_instruction']:,.0f} ({_err(r['per_instruction'], m)}) | "
            f"{r['block_unlimited']:,.0f} ({_err(r['block_unlimited'], m)}) | "
            f"{r['l1_model_at_ncu']:,.0f} ({_err(r['l1_model_at_ncu'], m)}) | "
            f"{r['l1_model_at_rule']:,.0f} ({_err(r['l1_model_at_rule'], m)}) |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    rows = []
    for folder in args.folders:
        for raw in sorted(folder.glob("*_raw.csv.gz")):
            r = check_case(raw)
            if r is not None:
                rows.append(r)
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
