"""The x-gather model's L2 requests against ncu, with and without the L1 across an SM's blocks
(``sparsescope model score --l1-check PROFILE_DIR``).

For every profiled tile-kernel case (``spmv_tile``, the nonzero split of cuda-spmv-adaptive) in
the given profile folders (``results/<gpu>/profile/...``, the raw exports ``*_raw.csv.xz``),
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
holds the resident blocks' shared memory). The profiles read are the H200's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from sparsescope._compressed import compressed_files, without_compression
from sparsescope.analyze.score_runs import suite_csr
from sparsescope.errors import UnknownNameError, UsageError
from sparsescope.hardware.specs import UNIFIED_L1_SHARED_KIB, get_spec
from sparsescope.model.l1_cache import L1Cache, l1_data_bytes
from sparsescope.model.xgather import x_gather
from sparsescope.profile.read_csv import read_raw_rows

KB = 1024
PROFILED = get_spec("H200")  # the GPU of the profiles read here
UNIFIED = UNIFIED_L1_SHARED_KIB[PROFILED.compute_capability] * KB
SMS = PROFILED.sm_count
STATIC_SHARED = "launch__shared_mem_per_block_static"


def _matrix(name: str):
    """The profiled matrix, generated again (seed6 or the population suite, seed 0, scale 1)."""
    for suite in ("seed6", "population"):
        try:
            return suite_csr(suite, name)
        except UnknownNameError:
            continue
    raise UsageError(f"{name}: in neither the seed6 nor the population suite")


def _number(row: dict[str, str], key: str) -> float:
    return float(row[key].replace(",", ""))


def check_case(raw: Path) -> dict | None:
    """The case's row of the table, or None when its export holds no tile kernel."""
    case = without_compression(raw.name).removesuffix("_raw.csv")
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


def l1_table(rows: list[dict]) -> str:
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




def l1_check(folders: Sequence[str | Path]) -> list[dict]:
    """:func:`check_case` of every ``*_raw.csv.xz`` (or ``.gz``) export in ``folders`` that
    holds a tile kernel, in name order."""
    rows = []
    for folder in map(Path, folders):
        if not folder.is_dir():
            raise UsageError(f"{folder}: not a profile folder")
        for raw in compressed_files(folder, "*_raw.csv"):
            r = check_case(raw)
            if r is not None:
                rows.append(r)
    return rows
