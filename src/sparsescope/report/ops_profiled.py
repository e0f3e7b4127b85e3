"""The ncu side of the SpMM and row-slice sections: which profiles belong to which case, the
kernels of every profiled case, and the instruction roofline of each op.

Profile labels read ``"<backend> <matrix> <params>: <kernel>"``, as
``sparsescope.target.split_marked_profiles`` makes them.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sparsescope.analyze.diagnose import stall_name
from sparsescope.report.labels import code, label
from sparsescope.report.ops_common import OpView, l2_bw_gb_s, md_table
from sparsescope.results.records import RunSet


@functools.lru_cache(maxsize=4096)
def label_case(op: str, label: str) -> tuple[str, str, Any] | None:
    """(backend, matrix, parameter record of ``op``) of the case a profile label names
    (``"<backend> <matrix> <name>=<value> ...: <kernel>"``, ``target.case_label``), or None
    when the label names no case of ``op``. The label carries the parameters the profiled
    case spec gave, which need not be all of them (``run_marked_cases`` labels a spec as
    written): the op fills in its defaults, so a label matches the recorded case whether or not
    it spelled a default out."""
    from sparsescope.errors import SparsescopeError
    from sparsescope.ops.registry import get_op

    head, sep, _ = label.partition(": ")
    words = head.split(" ")
    if not sep or len(words) < 2:
        return None
    params = {}
    for word in words[2:]:
        name, eq, value = word.partition("=")
        if not eq or not name:
            return None
        params[name] = value
    try:
        record = get_op(op).resolve_params(params)
    except (SparsescopeError, TypeError, ValueError):
        return None
    return words[0], words[1], record


def case_profiles(v: OpView, profiles: Sequence[Any], labels: Sequence[str] | None) -> list:
    """The profiles whose label names the case of ``v`` (none without labels): the same
    backend, matrix and parameters, defaults included."""
    if not profiles or not labels:
        return []
    want = (v.case.backend, v.case.matrix, v.case.params)
    return [p for p, label in zip(profiles, labels, strict=True)
            if label_case(v.case.op, label) == want]


def profiled_cases(views: Sequence[OpView], profiles: Sequence[Any],
                   labels: Sequence[str] | None, key) -> list[dict]:
    """Per profiled (case, backend): kernels launched, their summed time under ncu, and the
    longest kernel with its achieved occupancy and first stall reason."""
    rows = []
    for v in views:
        found = [p for p in case_profiles(v, profiles, labels) if p.duration_ns]
        if not found:
            continue
        main = max(found, key=lambda p: p.duration_ns)
        stall = max(main.stalls.items(), key=lambda kv: kv[1]) if main.stalls else None
        rows.append({"case": " ".join(str(x) for x in key(v)),
                     "backend": v.case.backend, "time_ms": v.time_ms,
                     "kernels": len(found),
                     "ncu_sum_us": sum(p.duration_ns for p in found) / 1e3,
                     "main_kernel": main.name, "main_us": main.duration_ns / 1e3,
                     "main_grid_blocks": main.grid_size, "main_block_threads": main.block_size,
                     "main_achieved_occupancy_pct": main.achieved_occupancy_pct,
                     "main_top_stall": stall[0] if stall else None,
                     "main_top_stall_cycles_per_inst": stall[1] if stall else None})
    return rows


def profiled_markdown(rows: list[dict]) -> str:
    """The :func:`profiled_cases` table with what its columns mean."""
    return ("Every kernel of one call under ncu (caches flushed before each kernel): the "
            "count, their summed duration, and the longest one. The event-timed `ms` is the "
            "whole call, launch gaps included.\n\n"
            + md_table(["case", "backend", "timed ms", "kernels", "ncu µs (sum)",
                        "longest kernel", "µs", "grid", "block", "achieved occ. %",
                        "top stall", "cycles/inst"],
                       [[r["case"], r["backend"], r["time_ms"], r["kernels"], r["ncu_sum_us"],
                         code(r["main_kernel"]), r["main_us"], r["main_grid_blocks"],
                         r["main_block_threads"], r["main_achieved_occupancy_pct"],
                         stall_name(r["main_top_stall"]) if r["main_top_stall"] else None,
                         r["main_top_stall_cycles_per_inst"]]
                        for r in rows]))


def profile_label_text(name: str) -> str:
    """A profiled kernel's label for a reader: ``<backend> <matrix> <params>: <kernel>`` with
    the parameters in words and the kernel as code (the name ncu prints)."""
    prefix, sep, kernel = name.rpartition(": ")
    if not sep:
        return code(name)
    words = re.sub(r"(\w+)=(\S+)", lambda m: f"{label(m.group(1))} {m.group(2)}", prefix)
    return f"{words}: {code(kernel)}"


def with_profiled(what: str, sections: Sequence[tuple[str, str]],
                  kernels: list[dict]) -> tuple[tuple[str, str], ...]:
    """An op's ``sections``, then ``<what>: profiled kernels per case`` when a case of it was
    profiled (``kernels``: its :func:`profiled_cases` rows)."""
    extra = [(f"{what}: profiled kernels per case", profiled_markdown(kernels))] if kernels else []
    return (*sections, *extra)


def roofline_markdown(runset: RunSet, profiles: Sequence[Any], labels: Sequence[str] | None,
                      figure_dir: Path | None) -> tuple[str, list[Path]]:
    """Instruction-roofline table of profiled kernels and one figure per backend (the first
    word of a label, as seed 004 draws one roofline per library); ceilings from the profile's
    own peaks where present, else the spec (datasheet) and the run's measured L2."""
    from sparsescope.profile.instruction_roofline import (
        WALLS,
        ceilings_from_device,
        ceilings_from_profile,
        instruction_roofline,
        merge_ceilings,
    )

    points = instruction_roofline(list(profiles), list(labels) if labels else None)
    if not points:
        return ("No profile with the instruction-roofline metrics was given (collect with "
                "`--groups instruction-roofline` or `--set full`).", [])
    ceilings = merge_ceilings(ceilings_from_profile(profiles[0]),
                              ceilings_from_device(runset.device,
                                                   l2_bw_gb_s=l2_bw_gb_s(runset)))
    body = []
    for p in points:
        placed = []
        for level, ii, bw in (("L1", p.l1_intensity, ceilings.l1_gtxn_s),
                              ("L2", p.l2_intensity, ceilings.l2_gtxn_s),
                              ("DRAM", p.dram_intensity, ceilings.dram_gtxn_s)):
            if ii and bw:
                roof = min(ceilings.peak_warp_gips or float("inf"), ii * bw)
                placed.append((p.warp_gips / roof, level))
        bound = max(placed)[1] if placed else "–"
        wall = (min(WALLS, key=lambda w: abs(math.log(p.global_intensity / WALLS[w])))
                if p.global_intensity else "–")
        # thread instructions predicated on / 32 <= warp instructions: the shortfall is the
        # share of lanes idle or predicated off (seed 004's thread-predication gap)
        predication = (100.0 * (1 - p.predicated_on_gips / p.warp_gips)
                       if p.predicated_on_gips else None)
        body.append([profile_label_text(p.kernel), p.duration_ns / 1e3, p.warp_gips,
                     p.l1_intensity,
                     p.l2_intensity, p.dram_intensity, p.global_intensity, wall, bound,
                     predication])
    table = md_table(["kernel", "µs", "warp GIPS", "II L1", "II L2", "II DRAM",
                      "II global ld/st", "nearest wall", "closest ceiling", "predicated off %"],
                     body)
    sources = "; ".join(f"{k}: {v}" for k, v in ceilings.sources.items())
    text, written = f"{table}\n\nCeilings: {sources}.", []
    if figure_dir is not None:
        from sparsescope.report.profile_figures import instruction_roofline_figure

        groups: dict[str, list] = {}
        for p in points:
            groups.setdefault(p.kernel.split(" ")[0] if labels else "kernels", []).append(p)
        for key, members in groups.items():
            name = "ops_iroofline_" + "".join(c if c.isalnum() or c in "-_" else "-" for c in key)
            written.append(instruction_roofline_figure(members, ceilings,
                                                       figure_dir / f"{name}.png"))
            text += f"\n\n![Instruction roofline: {key}](figures/{name}.png)"
    return text, written
