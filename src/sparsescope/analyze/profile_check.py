"""The time model's counts against Nsight Compute's, case by case
(``sparsescope model score --profile-check PROFILE_DIR``, issue 36: where a model-accuracy
target is missed, "the report names the term that misses it, from a profile").

For every profiled SpMV case under the given folders (a raw-page export ``*_raw.csv[.xz|.gz]``; the
matrix and the backend from its name, ``profile_SUITE_MATRIX_BACKEND`` or
``MATRIX.spmvK.BACKEND``, else its folder's), the matrix is generated again (its suite, else
seed6 or the population suite; seed 0, scale 1) and the same backend is planned on the host and
predicted on the profiled GPU in the latency mode, as ``sparsescope model MATRIX --backend B``
predicts it (the same memory and work budgets; the datasheet's rates: the counts do not depend
on them). What ncu counted (:mod:`.ncu_counts`) stands beside what the model charges::

    warp instructions  the issue term's input: sum over warps of
                       (main_w x loop + rem_w x remainder + other)   (model.onchip)
    DRAM bytes read    the dram term's: streams + x gathers missing the L2 + refetches
                       (the flush's write-back left out: ncu counts reads)
    blocks             the launch (latency, imbalance): the plan's grid against ncu's
    main loop          iterations (sum over warps of main_w) x instructions an iteration
                       (model.onchip.loop_issued_instructions) against the header's
                       executions x the loop's executed instructions per execution
    remainder loop     likewise (rem_w, the remainder body)
    outside the loops  the model's per-warp instructions against ncu's executions outside
                       every loop / warps launched

The model's loops are paired with ncu's by body size (the nearest static instruction count;
the main loop first, the remainder among loops that neither hold nor sit in it): the loop that
executes the most need not be the model's main loop (csr_scalar on webbase-1M runs its
remainder more). A count off by more than :data:`TOLERANCE` is named in the row's verdict, in
words made from the numbers: the issue term's miss is split over the loops, the code outside
them and the loops the model does not count; the dram term's over the streams and x.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from sparsescope.analyze.ncu_counts import (
    NcuCounts,
    NcuLoop,
    ProfiledCase,
    find_cases,
    kernel_instance,
    read_ncu_counts,
    same_kernel,
)
from sparsescope.errors import SparsescopeError, UnknownNameError

#: A count is off when the model's is more than this share away from ncu's.
TOLERANCE = 0.10
#: The suites a case name without one is looked for in, in order (as ``--l1-check``).
SUITES = ("seed6", "population")

Progress = Callable[[str], None] | None


# -- the model's counts -------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelCounts:
    """What the model charges the case (module docstring), or why it does not."""

    kernel: str = ""
    """The kernel the host plan launches (an auto backend's choice)."""
    not_modelled: str = ""
    predicted_ms: float | None = None
    warp_instructions: float = 0.0
    dram_read_bytes: float = 0.0
    """DRAM bytes the dram term charges, the flush's write-back left out."""
    x_dram_bytes: float = 0.0
    """Of which the x gathers that miss the L2 (the rest: the streams and refetches)."""
    blocks: float = 0.0
    warps: int = 0
    """Warps the instruction count charges (``other`` once each)."""
    main_iterations: float = 0.0
    """Sum over warps of the main loop's iterations (``model.onchip.warp_iterations``)."""
    loop_instructions: float = 0.0
    """Instructions one main-loop iteration issues (``loop_issued_instructions``)."""
    loop_body_instructions: int = 0
    """The main loop's body in the SASS (its static size: what pairs it with ncu's loop)."""
    remainder_iterations: float = 0.0
    remainder_instructions: int = 0
    other_instructions: float = 0.0
    """Instructions a warp issues outside the loops."""
    instructions_per_nonzero: float = 0.0
    """A library's declared count (its SASS not read), 0 for a kernel counted from SASS."""
    nnz: int = 0
    sampled: tuple[str, ...] = ()
    """The prediction's assumptions about row samples (plan and work budgets)."""

    def as_dict(self) -> dict:
        return asdict(self)


def case_matrix(case: ProfiledCase):
    """The case's matrix, generated again (its suite, else :data:`SUITES` in order; seed 0,
    scale 1), or why it cannot be."""
    from sparsescope.analyze.score_runs import suite_csr

    suites = (case.suite,) if case.suite else SUITES
    for suite in suites:
        try:
            return suite_csr(suite, case.matrix)
        except UnknownNameError:
            continue
    return f"{case.matrix}: in none of the suites {', '.join(suites)}"


def _device(gpu: str):
    """The prediction context of the GPU ncu names (the datasheet: the counts do not depend on
    the rates), or why there is none."""
    from sparsescope.context import named_gpu
    from sparsescope.hardware.specs import match_device_name

    spec = match_device_name(gpu) if gpu else None
    if spec is None:
        return f"the export names no GPU the spec table knows ({gpu or 'no name'})"
    return named_gpu(spec.name, use_store=False)


def model_counts(case: ProfiledCase, ncu: NcuCounts, progress: Progress = None) -> ModelCounts:
    """The model's counts of ``case`` (its backend on its matrix, on the GPU ncu names, in the
    latency mode; module docstring), planned and predicted as ``sparsescope model`` does."""
    from sparsescope.analyze.score_runs import backend_of_label
    from sparsescope.context.predict import (
        default_memory_budget,
        plan_case,
        plan_memory_budget,
        planned_call,
        refined_shape,
    )
    from sparsescope.model.onchip import loop_issued_instructions, warp_iterations
    from sparsescope.timing.types import TimingConfig
    from sparsescope.whatif import predict_case

    device = _device(ncu.gpu)
    if isinstance(device, str):
        return ModelCounts(not_modelled=device)
    csr = case_matrix(case)
    if isinstance(csr, str):
        return ModelCounts(not_modelled=csr)
    if progress:
        progress(f"{case.matrix} / {case.backend}: planning and predicting "
                 f"({csr.nnz:,} nonzeros)")
    try:
        backend = backend_of_label(case.backend)
    except SparsescopeError as exc:  # options this checkout's backend does not take
        return ModelCounts(not_modelled=f"{case.backend}: {exc}")
    width = int(backend.capability.index_bytes[0])
    with plan_memory_budget(default_memory_budget()):
        planned = plan_case("spmv", csr, None, index_bytes=width)
        what = predict_case(case.matrix, csr, backend, device, label=case.backend,
                            case=planned, timing=TimingConfig(mode="latency").checked())
        p = what.prediction
        if p is None:
            return ModelCounts(kernel=what.kernel, not_modelled=what.not_modelled)
        shape, _ = refined_shape(planned_call(planned, backend, device, "float32",
                                              width).shape, device)
        main, rem = warp_iterations(planned.matrix.indptr, shape)
    inputs = p.inputs
    return ModelCounts(
        kernel=what.kernel, predicted_ms=p.predicted_ms,
        warp_instructions=float(inputs.get("warp_instructions", 0.0)),
        dram_read_bytes=float(inputs["dram_bytes"] - inputs.get("flush_writeback_bytes", 0.0)),
        x_dram_bytes=float(inputs.get("x_dram_bytes", 0.0)),
        blocks=float(inputs.get("blocks", shape.grid_blocks)), warps=int(main.size),
        main_iterations=float(main.sum()), loop_instructions=loop_issued_instructions(shape),
        loop_body_instructions=int(shape.loop_instructions),
        remainder_iterations=float(rem.sum()),
        remainder_instructions=int(shape.remainder_instructions),
        other_instructions=float(shape.other_instructions),
        instructions_per_nonzero=float(shape.instructions_per_nonzero), nnz=int(csr.nnz),
        sampled=tuple(a for a in what.assumptions if "sample" in a))


# -- the comparison -----------------------------------------------------------------------------
def _off(model: float | None, ncu: float | None) -> bool:
    """The model's count is more than :data:`TOLERANCE` away from ncu's (either missing: no)."""
    if model is None or ncu is None:
        return False
    if ncu == 0:
        return model != 0
    return abs(model / ncu - 1) > TOLERANCE


def _ratio(model: float | None, ncu: float | None) -> float | None:
    return model / ncu if model is not None and ncu else None


def _n(x: float | None) -> str:
    """A count for reading: ``66.7 M``, ``140.0 k``, ``405``."""
    if x is None:
        return "-"
    for above, scale, unit in ((1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k")):
        if abs(x) >= above:
            return f"{x / scale:.1f} {unit}"
    return f"{x:,.0f}"


def _mb(x: float | None) -> str:
    """Bytes for reading: ``237.5 MB``, ``52 kB`` below 0.1 MB."""
    if x is None:
        return "-"
    return f"{x / 1e6:,.1f} MB" if abs(x) >= 1e5 else f"{x / 1e3:,.0f} kB"


def _times(model: float | None, ncu: float | None) -> str:
    r = _ratio(model, ncu)
    return f"{r:.2f}x" if r is not None else "ncu: 0"


def pair_loops(loops: Sequence[NcuLoop], model: ModelCounts
               ) -> tuple[NcuLoop | None, NcuLoop | None]:
    """(ncu's loop of the model's main loop, of its remainder loop): the nearest static size,
    the more executed on a tie; the remainder among loops that neither hold nor sit in the
    main one. None where the model has no such loop (a library's declared count)."""
    def nearest(body: int, apart: NcuLoop | None) -> NcuLoop | None:
        if body <= 0:
            return None
        kept = [lp for lp in loops
                if apart is None or not (lp.contains(apart) or apart.contains(lp))]
        return min(kept, key=lambda lp: (abs(lp.static_instructions - body),
                                         -lp.executed_instructions), default=None)

    main = nearest(model.loop_body_instructions, None)
    return main, nearest(model.remainder_instructions, main)


def _loop_misses(what: str, model_iters: float, model_each: float, lp: NcuLoop) -> list[str]:
    """What is off in the model's charge for one loop: its iterations, its body."""
    words = []
    if _off(model_iters, lp.iterations):
        words.append(f"the {what} is charged {_n(model_iters)} iterations, "
                     f"{_n(lp.iterations)} run")
    if _off(model_each, lp.instructions_per_iteration):
        body = "loop body" if what == "main loop" else f"{what}'s body"
        words.append(f"the {body} is charged {model_each:,.0f} an iteration, "
                     f"{lp.instructions_per_iteration:,.0f} run")
    return words


def _loop_words(what: str, model_iters: float, model_each: float, lp: NcuLoop) -> list[str]:
    """:func:`_loop_misses`, or (neither off on its own) the loop's instructions in all."""
    each = lp.instructions_per_iteration
    return _loop_misses(what, model_iters, model_each, lp) or [
        f"the {what} is charged {_n(model_iters * model_each)} instructions, "
        f"{_n(lp.executed_instructions)} run ({_n(model_iters)} x {model_each:,.0f}; "
        f"{_n(lp.iterations)} x {each or 0:,.0f})"]


def _outside_words(ncu: NcuCounts, model: ModelCounts) -> str:
    outside = ncu.source.outside_instructions / (ncu.warps or 1) if ncu.source else 0.0
    words = (f"the code outside the loops is charged {model.other_instructions:,.0f} a warp, "
             f"{outside:,.0f} run")
    if model.warps != ncu.warps:
        words += f" (over {model.warps:,} warps; {ncu.warps:,} launched)"
    return words


def input_misses(ncu: NcuCounts, model: ModelCounts, main: NcuLoop | None,
                 rem: NcuLoop | None) -> list[str]:
    """The issue term's inputs off on their own: each paired loop's iterations and body, the
    code outside the loops a warp."""
    words = []
    for what, lp, iters, each in (("main loop", main, model.main_iterations,
                                   model.loop_instructions),
                                  ("remainder loop", rem, model.remainder_iterations,
                                   float(model.remainder_instructions))):
        if lp is not None:
            words += _loop_misses(what, iters, each, lp)
    if ncu.source is not None and not model.instructions_per_nonzero and _off(
            model.other_instructions, ncu.source.outside_instructions / (ncu.warps or 1)):
        words.append(_outside_words(ncu, model))
    return words


def instruction_parts(ncu: NcuCounts, model: ModelCounts, main: NcuLoop | None,
                      rem: NcuLoop | None) -> list[tuple[float, list[str]]]:
    """The issue term's count split into parts, each as (model - ncu instructions, the words
    that say why): the main and remainder loops, the code outside the loops, and the loops the
    model does not count. Empty where the export has no source page, or the model counts a
    library's instructions a nonzero (one part, in those words)."""
    if model.instructions_per_nonzero:
        ncu_each = ncu.warp_instructions / model.nnz if model.nnz else 0.0
        return [(model.warp_instructions - ncu.warp_instructions,
                 [f"the library is charged {model.instructions_per_nonzero:.2f} a nonzero, "
                  f"{ncu_each:.2f} run"])]
    src = ncu.source
    if src is None:
        return []
    parts = []
    for what, lp, iters, each in (("main loop", main, model.main_iterations,
                                   model.loop_instructions),
                                  ("remainder loop", rem, model.remainder_iterations,
                                   float(model.remainder_instructions))):
        if lp is not None:
            parts.append((iters * each - lp.executed_instructions,
                          _loop_words(what, iters, each, lp)))
    parts.append((model.warps * model.other_instructions - src.outside_instructions,
                  [_outside_words(ncu, model)]))
    paired = [lp for lp in (main, rem) if lp is not None]
    uncounted = (src.instructions - src.outside_instructions
                 - sum(lp.executed_instructions for lp in paired))
    if uncounted > 0:
        heads = ", ".join(f"0x{lp.header_offset:x}" for lp in src.loops
                          if lp.executed_instructions and not any(
                              p.contains(lp) or lp.contains(p) for p in paired))
        parts.append((-uncounted, [f"{_n(uncounted)} run in loops the model does not count "
                                   f"({heads or 'nested'})"]))
    return parts


def _issue_words(ncu: NcuCounts, model: ModelCounts, main, rem) -> str:
    """Why the warp instructions miss: the parts whose instructions differ by more than
    :data:`TOLERANCE` of ncu's count, largest first (else the largest), then any other input
    off on its own."""
    parts = sorted(instruction_parts(ncu, model, main, rem), key=lambda part: -abs(part[0]))
    if not parts:
        return "no source page: the loops are not split"
    big = [w for gap, words in parts if abs(gap) > TOLERANCE * ncu.warp_instructions
           for w in words] or parts[0][1]
    return "; ".join(big + [w for w in input_misses(ncu, model, main, rem) if w not in big])


def verdict(ncu: NcuCounts, model: ModelCounts, main: NcuLoop | None,
            rem: NcuLoop | None) -> str:
    """The counts off by more than :data:`TOLERANCE`, each named with its term, in words made
    from the numbers (module docstring)."""
    if model.not_modelled:
        return f"not modelled: {model.not_modelled}"
    said = []
    if model.kernel and not same_kernel(model.kernel, ncu.kernel):
        said.append(f"kernel: the model plans {kernel_instance(model.kernel)}, ncu ran "
                    f"{kernel_instance(ncu.kernel)}: the counts are of different kernels")
    if _off(model.blocks, ncu.grid_blocks):
        said.append(f"launch: {model.blocks:,.0f} blocks modelled, {ncu.grid_blocks:,} "
                    f"launched ({_times(model.blocks, ncu.grid_blocks)})")
    if _off(model.warp_instructions, ncu.warp_instructions):
        said.append(f"issue: {_n(model.warp_instructions)} warp instructions modelled, "
                    f"{_n(ncu.warp_instructions)} counted "
                    f"({_times(model.warp_instructions, ncu.warp_instructions)}): "
                    f"{_issue_words(ncu, model, main, rem)}")
    elif misses := input_misses(ncu, model, main, rem):
        said.append(f"issue's inputs, the warp instructions within {TOLERANCE:.0%} "
                    f"({_times(model.warp_instructions, ncu.warp_instructions)}): "
                    f"{'; '.join(misses)}")
    if _off(model.dram_read_bytes, ncu.dram_read_bytes):
        streams = model.dram_read_bytes - model.x_dram_bytes
        left = ncu.dram_read_bytes - streams
        rest = (f"ncu's count leaves {_mb(left)} for x" if left >= 0 else
                f"ncu counted {_mb(-left)} less than the modelled streams alone")
        said.append(f"dram: {_mb(model.dram_read_bytes)} read modelled, "
                    f"{_mb(ncu.dram_read_bytes)} counted "
                    f"({_times(model.dram_read_bytes, ncu.dram_read_bytes)}): the streams "
                    f"are charged {_mb(streams)} and the x gathers {_mb(model.x_dram_bytes)}; "
                    f"{rest}")
    if said:
        return "; ".join(said)
    ncu_ms = ncu.duration_ns / 1e6 if ncu.duration_ns else None
    if _off(model.predicted_ms, ncu_ms):
        return (f"counts within {TOLERANCE:.0%}; the time is off "
                f"({_times(model.predicted_ms, ncu_ms)}): the miss is in the rates or in how "
                f"the terms combine, not in these counts")
    return f"counts and time within {TOLERANCE:.0%}"


def compare(case: ProfiledCase, ncu: NcuCounts, model: ModelCounts) -> dict:
    """The case's row: both sides' counts, model / ncu for each, the paired loops, the verdict."""
    main, rem = pair_loops(ncu.source.loops if ncu.source else (), model)
    outside = ncu.source.outside_instructions / ncu.warps if ncu.source and ncu.warps else None
    ncu_ms = ncu.duration_ns / 1e6 if ncu.duration_ns else None
    pairs = {
        "warp_instructions": (model.warp_instructions, ncu.warp_instructions),
        "dram_read_bytes": (model.dram_read_bytes, ncu.dram_read_bytes),
        "blocks": (model.blocks, ncu.grid_blocks),
        "main_iterations": (model.main_iterations, main.iterations if main else None),
        "main_instructions_per_iteration": (model.loop_instructions,
                                            main.instructions_per_iteration if main else None),
        "remainder_iterations": (model.remainder_iterations, rem.iterations if rem else None),
        "remainder_instructions_per_iteration": (
            float(model.remainder_instructions), rem.instructions_per_iteration if rem else None),
        "outside_instructions_per_warp": (
            None if model.instructions_per_nonzero else model.other_instructions, outside),
        "time_ms": (model.predicted_ms, ncu_ms),
    }
    if model.instructions_per_nonzero:  # a library's declared count
        pairs["instructions_per_nonzero"] = (model.instructions_per_nonzero,
                                             ncu.warp_instructions / model.nnz if model.nnz
                                             else None)
    modelled = not model.not_modelled
    counts = {k: {"model": m if modelled else None, "ncu": n,
                  "ratio": _ratio(m, n) if modelled else None, "off": modelled and _off(m, n)}
              for k, (m, n) in pairs.items()}
    return {"matrix": case.matrix, "backend": case.backend, "suite": case.suite,
            "raw": str(case.raw), "ncu": ncu.as_dict(), "model": model.as_dict(),
            "paired_loops": {"main": f"0x{main.header_offset:x}" if main else None,
                             "remainder": f"0x{rem.header_offset:x}" if rem else None},
            "counts": counts, "verdict": verdict(ncu, model, main, rem)}


def profile_check(folders: Sequence[str | Path], *, progress: Progress = None
                  ) -> tuple[list[dict], list[str]]:
    """(a :func:`compare` row for every SpMV case under ``folders``, notes on the exports
    passed over), cases of one matrix one after another (each matrix generated once)."""
    cases, notes = find_cases(folders)
    rows = []
    for at, case in enumerate(cases):
        if progress and (at == 0 or cases[at - 1].matrix != case.matrix):
            progress(f"{case.matrix}: generating the matrix (seed 0, scale 1)")
        ncu = read_ncu_counts(case.raw)
        rows.append(compare(case, ncu, model_counts(case, ncu, progress)))
    return rows, notes


# -- the table ----------------------------------------------------------------------------------
def _cell(counts: dict, key: str, fmt: Callable[[float | None], str] = _n) -> str:
    c = counts[key]
    ratio = f" ({c['ratio']:.2f}x)" if c["ratio"] is not None else ""
    return f"{fmt(c['model'])} / {fmt(c['ncu'])}{ratio}"


def _loop_cell(counts: dict, which: str) -> str:
    it, each = counts[f"{which}_iterations"], counts[f"{which}_instructions_per_iteration"]
    if it["ncu"] is None:
        return "-"

    def side(n, e):
        return "-" if n is None else _n(n) + (f" x {e:,.0f}" if n and e is not None else "")

    return f"{side(it['model'], each['model'])} / {side(it['ncu'], each['ncu'])}"


def _us(ms: float | None) -> str:
    return "-" if ms is None else f"{ms * 1e3:,.1f}"


def profile_table(rows: list[dict], notes: Sequence[str] = ()) -> str:
    """The rows as a Markdown table (model / ncu in each cell), then the notes."""
    out = ["| matrix | backend | kernel (ncu) | warp instructions | DRAM read | blocks | main "
           "loop: iterations x instructions | remainder loop | outside the loops, a warp | "
           "time, us | verdict |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        c = r["counts"]
        out.append(
            f"| {r['matrix']} | {r['backend']} | {kernel_instance(r['ncu']['kernel'])} | "
            f"{_cell(c, 'warp_instructions')} | {_cell(c, 'dram_read_bytes', _mb)} | "
            f"{_cell(c, 'blocks')} | {_loop_cell(c, 'main')} | {_loop_cell(c, 'remainder')} | "
            f"{_cell(c, 'outside_instructions_per_warp')} | {_cell(c, 'time_ms', _us)} | "
            f"{r['verdict']} |")
    out += ["", f"Each cell: model / ncu (model / ncu as a factor); a count more than "
                f"{TOLERANCE:.0%} off is named in the verdict with the term it feeds. Loops: "
                f"iterations summed over warps x instructions an iteration, the model's loops "
                f"paired with ncu's by body size. The model's counts as `sparsescope model` "
                f"makes them (row samples above its budgets: each row's `sampled` in --json); "
                f"its time on the GPU's datasheet rates, ncu's under the profiler (caches "
                f"flushed before the kernel)."]
    out += [f"- passed over: {n}" for n in notes]
    return "\n".join(out)
