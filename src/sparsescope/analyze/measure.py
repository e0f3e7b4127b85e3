"""Measure a workload on the GPU: time it with the project's protocol (:mod:`sparsescope.timing`,
CUDA events), check it against its reference, profile one call under Nsight Compute
(:mod:`sparsescope.profile.collect`, ``--set full`` with source counters), analyse the SASS of its
kernels (:mod:`sparsescope.sass`) and compute the model's floor -- then assemble the
:class:`~sparsescope.analyze.evidence.Evidence`.

GPU libraries (CuPy, PyTorch) are imported inside the functions. The ncu run profiles exactly one
call: the target program (``python -m sparsescope.target workload``) warms up, then brackets
one call with ``cudaProfilerStart/Stop`` and ncu runs with ``--profile-from-start off``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from sparsescope._compressed import kept_file, read_bytes, read_json
from sparsescope.analyze.workload import Workload, bf16_bits_to_float, host_arrays, resolve_callable
from sparsescope.errors import DeviceError, SparsescopeError, UsageError

#: Written into the output folder before profiling: the timed and checked numbers.
MEASUREMENT_FILE = "measurement.json"
#: Relative-error tolerance by output precision (bf16 has 8 mantissa bits: ~4e-3 per rounding).
TOLERANCE = {"bfloat16": 2e-2, "float16": 1e-2, "float32": 1e-4, "float64": 1e-10}


@dataclass
class Instance:
    """A workload ready to run: ``call()`` launches one call's work and returns its output."""

    call: Callable[[], object]
    library: str
    reference: Callable[[], object] | None
    inputs_bytes: int | None = None
    """Bytes of the declared inputs (for inferring ideal bytes), when known."""
    out_dtypes: tuple[str, ...] = ()
    launch: Callable[[], object] | None = None
    """What is timed and profiled: the call without output conversion (``call`` when None)."""

    @property
    def timed(self) -> Callable[[], object]:
        return self.launch or self.call


def _library_of(obj) -> str | None:
    mod = type(obj).__module__.split(".")[0]
    return mod if mod in ("torch", "cupy") else None


def to_numpy(x) -> list[np.ndarray]:
    """Output(s) as float64/int NumPy arrays (torch bf16 goes through float32)."""
    if x is None:
        return []
    if isinstance(x, tuple | list):
        return [a for item in x for a in to_numpy(item)]
    lib = _library_of(x)
    if lib == "torch":
        t = x.detach()
        if t.dtype.is_floating_point and t.element_size() < 4:
            t = t.float()
        return [t.cpu().numpy()]
    if lib == "cupy":
        return [x.get()]
    return [np.asarray(x)]


def _dtype_name(x) -> str:
    return str(getattr(x, "dtype", "")).replace("torch.", "")


def relative_error(out: list[np.ndarray], ref: list[np.ndarray]) -> tuple[float, float]:
    """(||out - ref||_2 / ||ref||_2, max |out - ref|) over all outputs, in float64."""
    if len(out) != len(ref):
        raise UsageError(f"the workload returned {len(out)} output(s), the reference {len(ref)}")
    a = np.concatenate([np.asarray(o, dtype=np.float64).ravel() for o in out]) if out else \
        np.zeros(0)
    b = np.concatenate([np.asarray(r, dtype=np.float64).ravel() for r in ref]) if ref else \
        np.zeros(0)
    if a.shape != b.shape:
        raise UsageError(f"output has {a.size} values, the reference {b.size}")
    diff = a - b
    norm = np.linalg.norm(b)
    rel = float(np.linalg.norm(diff) / norm) if norm > 0 else float(np.linalg.norm(diff))
    return rel, float(np.max(np.abs(diff))) if diff.size else 0.0


def instantiate(workload: Workload) -> Instance:
    """Build the workload's inputs and return its call (CuPy compiles a CUDA source here)."""
    if workload.kind == "cuda":
        return _cuda_instance(workload)
    fn = resolve_callable(workload.target)
    ref = resolve_callable(workload.reference) if workload.reference else None
    meta = getattr(fn, "__sparsescope__", {})
    inputs_bytes = None
    if callable(meta.get("inputs")):
        arrays = meta["inputs"]()
        inputs_bytes = sum(int(getattr(a, "nbytes", 0)) for a in arrays)
    probe = fn()
    lib = workload.library or next((_library_of(o) for o in (probe if isinstance(
        probe, tuple | list) else (probe,)) if _library_of(o)), None) or \
        ("torch" if "torch" in sys.modules else "cupy")
    dtypes = tuple(_dtype_name(o) for o in (probe if isinstance(probe, tuple | list)
                                             else (probe,)) if o is not None)
    return Instance(fn, lib, ref, inputs_bytes, dtypes)


def _cuda_instance(workload: Workload) -> Instance:
    import cupy

    L = workload.launch
    host = host_arrays(L.args)
    module = cupy.RawModule(code=L.source.read_text(), options=L.options,
                            name_expressions=[L.kernel] if "<" in L.kernel else ())
    kernel = module.get_function(L.kernel)
    grid, block = L.dims()
    dev = {s.name: (cupy.asarray(host[s.name]) if s.count is not None else host[s.name])
           for s in L.args}
    outs = [s for s in L.args if s.output]
    args = tuple(dev[s.name] for s in L.args)

    def call():
        kernel(grid, block, args, shared_mem=L.dynamic_shared_bytes)
        return tuple(dev[s.name] for s in outs)

    def checked():
        # bf16 outputs are uint16 bit patterns on the device: compare them as floats
        return tuple(bf16_bits_to_float(v.get()) if s.type == "bf16" else v
                     for s, v in zip(outs, call(), strict=True))

    ref = None
    if workload.reference:
        ref_fn = resolve_callable(workload.reference)

        def ref():
            got = ref_fn(dict(host))
            return got if isinstance(got, tuple | list) else (got,)

    return Instance(checked, "cupy", ref, None,
                    tuple("bfloat16" if s.type == "bf16" else str(host[s.name].dtype)
                          for s in outs), launch=call)


def check_correctness(inst: Instance, tolerance: float | None) -> dict:
    """Run once, compare with the reference: ``rel_err``, ``max_abs_err``, ``tolerance``,
    ``passed``; empty without a reference."""
    if inst.reference is None:
        return {}
    out = to_numpy(inst.call())
    ref = to_numpy(inst.reference())
    rel, mx = relative_error(out, ref)
    tol = tolerance if tolerance is not None else max(
        (TOLERANCE.get(d, 1e-4) for d in inst.out_dtypes), default=1e-4)
    return {"rel_err": rel, "max_abs_err": mx, "tolerance": tol, "passed": rel <= tol}


def _device():
    """(``DeviceEvidence`` of the present GPU from its spec, its ``context.DeviceContext``)."""
    from sparsescope.analyze.evidence import DeviceEvidence
    from sparsescope.context import present_gpu

    found = present_gpu(ceilings="none")
    if found is None:
        raise DeviceError("no CUDA GPU found (torch/CuPy): sparsescope analyze WORKLOAD needs "
                          "one; use --from-profile to analyse a recorded profile")
    s = found.spec
    return DeviceEvidence(s.name, s.compute_capability, s.sm_count, s.max_warps_per_sm,
                          s.peak_bw_gb_s, s.fp32_peak_gflops, s.dram_latency_ns, s.sm_clock_mhz,
                          f"spec table ({found.detected}, driver {found.driver})"), found


def profile_once(workload: Workload, out_dir: Path, *, ncu: str | None = None,
                 timeout_s: float = 900.0):
    """Profile one call under ncu (``--set full``, source counters); returns the ProfileRun."""
    from sparsescope.profile.collect import CollectOptions, run_profile, target_argv

    out_dir.mkdir(parents=True, exist_ok=True)
    spec_path = out_dir / "workload.json"
    spec_path.write_text(json.dumps(workload.to_dict(), indent=1))
    target = target_argv("workload", str(spec_path))
    options = CollectOptions(section_set="full", clock_control="none",
                             kernel_filter=f"regex:{workload.kernel}" if workload.kernel
                             else None, import_source=True,
                             extra_args=("--profile-from-start", "off"))
    return run_profile(target, out_dir, profile_stem_of(workload), options, ncu=ncu,
                       timeout_s=timeout_s)


def profile_stem_of(workload: Workload) -> str:
    """File stem of a workload's profile files: ``profile_<name>_<version>``, filename-safe."""
    return "profile_" + "".join(c if c.isalnum() or c in "._-" else "-"
                                for c in f"{workload.name}_{workload.version}")


def measure(workload: Workload, *, timing=None, profile: bool = True,
            out_dir: str | Path | None = None, ncu: str | None = None):
    """Evidence of ``workload`` on this machine's GPU (see the module docstring)."""
    from sparsescope.analyze.sources import analyses_from
    from sparsescope.timing.cuda import time_cuda
    from sparsescope.timing.types import TimingConfig

    device, det = _device()
    inst = instantiate(workload)
    correctness = check_correctness(inst, workload.tolerance)
    nbytes, how = workload.ideal_bytes, workload.bytes_source
    if nbytes is None and inst.inputs_bytes is not None:
        out_bytes = sum(o.nbytes for o in to_numpy(inst.call()))
        nbytes, how = inst.inputs_bytes + out_bytes, "inferred (declared inputs + output)"
    config = timing or TimingConfig(warmups=5, repeats=50, clock="cuda-events")
    m = time_cuda(inst.timed, config, library=inst.library, working_set_bytes=nbytes or 0)
    timing_info = {**{k: getattr(m.config, k) for k in ("warmups", "repeats", "statistic",
                                                         "clock", "flush_l2", "graph_capture")},
                   "flushed": m.flushed, "samples_ms": list(m.samples_ms),
                   "median_ms": m.median_ms, "cov": m.cov,
                   "kernel_breakdown": list(m.kernel_breakdown)}
    floor = nbytes / (device.peak_bw_gb_s * 1e9) * 1e3 if nbytes else None
    notes = [] if correctness.get("passed", True) else [
        f"INCORRECT: relative error {correctness['rel_err']:.3g} above "
        f"{correctness['tolerance']:.3g}; the time is not a valid result"]
    arch = f"sm_{device.compute_capability.replace('.', '')}"
    analyses = []
    if workload.cuda_source:
        try:
            analyses = analyses_from(workload.cuda_source, arch)
        except SparsescopeError as exc:  # no compiler here: the profile's own SASS is used
            notes.append(f"SASS of {workload.cuda_source.name} not compiled here ({exc}); "
                         "the static evidence comes from the profile's SASS")
    if not profile:
        from sparsescope.analyze.sources import evidence_from_sass

        ev = evidence_from_sass(analyses, workload=workload.name, version=workload.version,
                                block_threads=(workload.launch.dims()[1][0]
                                               if workload.launch else None),
                                ideal_bytes=nbytes, ideal_flops=workload.ideal_flops,
                                time_ms=m.time_ms, notes=notes)
        return replace(ev, device=device, time_source="cuda-events", bytes_source=how,
                       timing=timing_info, correctness=correctness, floor_ms=floor)
    out = Path(out_dir) if out_dir else Path(tempfile.mkdtemp(prefix="sparsescope-analyze-"))
    # kept before profiling: if ncu or a later step fails, the timed and checked numbers stay,
    # and --from-measurement rebuilds the analysis from them and the profile's exports
    from sparsescope._atomic import write_json_atomic
    from sparsescope.analyze.records import to_jsonable

    out.mkdir(parents=True, exist_ok=True)
    measured = {"workload": workload.to_dict(), "device": device.name,
                "device_evidence": to_jsonable(device), "time_ms": m.time_ms,
                "ideal_bytes": nbytes, "bytes_source": how, "floor_ms": floor,
                "timing": timing_info, "correctness": correctness, "notes": notes}
    write_json_atomic(out / MEASUREMENT_FILE, measured)
    run = profile_once(workload, out, ncu=ncu)
    return _profiled_evidence(workload, device, measured, run.raw_csv, run.source_csv,
                              run.report_path, analyses,
                              notes + [f"profile: {run.report_path.name} ({run.ncu_version})"])


def _profiled_evidence(workload: Workload, device, measured: dict, raw_csv: Path,
                       source_csv: Path | None, report: Path, analyses, notes):
    """The evidence of a measured and profiled workload: the profile's launches (launches per
    call counted from the one profiled call) with the measured time, timing and correctness."""
    from sparsescope.analyze.evidence import Evidence
    from sparsescope.analyze.sources import (
        evidence_from_profiles,
        launch_key,
        load_profiles,
        load_samples,
    )

    chosen, every = load_profiles(raw_csv)
    counts: dict[tuple, int] = {}
    for p in every:  # launches per call of each distinct launch (one call was profiled)
        counts[launch_key(p)] = counts.get(launch_key(p), 0) + 1
    ev = evidence_from_profiles(chosen, all_launches=every,
                                samples=load_samples(source_csv, report),
                                analyses=analyses, workload=workload.name,
                                version=workload.version, ideal_bytes=measured["ideal_bytes"],
                                ideal_flops=workload.ideal_flops,
                                bytes_source=measured["bytes_source"],
                                time_ms=measured["time_ms"], time_source="cuda-events",
                                launches=counts, timing=measured["timing"],
                                correctness=measured["correctness"], notes=notes)
    return Evidence(**{**{f: getattr(ev, f) for f in ev.__dataclass_fields__},
                       "device": device, "floor_ms": measured["floor_ms"]})


def measurement_file(folder: str | Path) -> Path:
    """``folder``'s ``measurement.json``, or its compressed copy (``measurement.json.xz``, as
    results folders keep it) where only that is there."""
    plain = Path(folder) / MEASUREMENT_FILE
    return kept_file(plain) or plain


def evidence_from_measurement(folder: str | Path):
    """Rebuild a live analysis's evidence without a GPU: ``measurement.json`` (the timed and
    checked numbers, written before profiling) and the profile's exports in ``folder`` (what
    ``sparsescope analyze WORKLOAD --out folder`` wrote), analysed by this sparsescope. The
    kernels' SASS is compiled again when the workload's CUDA source is here, else the
    profile's own SASS is used."""
    from sparsescope.analyze.evidence import DeviceEvidence
    from sparsescope.analyze.records import from_jsonable
    from sparsescope.analyze.sources import analyses_from, device_evidence
    from sparsescope.errors import ResultsFormatError

    folder = Path(folder)
    path = measurement_file(folder)
    try:
        measured = read_json(path)
        workload = Workload.from_dict(measured["workload"])
    except FileNotFoundError:
        raise ResultsFormatError(f"{path}: no such file (written by sparsescope analyze "
                                 "WORKLOAD --out DIR before it profiles)") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ResultsFormatError(f"{path}: not a measurement record ({exc})") from None
    if measured.get("device_evidence"):
        device = from_jsonable(DeviceEvidence, measured["device_evidence"], str(path))
    else:
        device = device_evidence(measured.get("device"))[0]
    stem = profile_stem_of(workload)
    raw = _plain(folder / f"{stem}_raw.csv")
    if raw is None:
        raise ResultsFormatError(f"{folder / f'{stem}_raw.csv'}: no such file (the profile's "
                                 "raw export)")
    source = _plain(folder / f"{stem}_source.csv")
    notes = list(measured.get("notes", ()))
    analyses = []
    src = workload.cuda_source
    if src is not None and src.is_file():
        try:
            analyses = analyses_from(src, f"sm_{device.compute_capability.replace('.', '')}")
        except SparsescopeError as exc:
            notes.append(f"SASS of {src.name} not compiled here ({exc}); the static evidence "
                         "comes from the profile's SASS")
    elif src is not None:
        notes.append(f"{src} not found here: the static evidence comes from the profile's SASS")
    notes.append(f"re-analysed from {path.name} and {stem}_*.csv")
    return _profiled_evidence(workload, device, measured, raw, source,
                              folder / f"{stem}.ncu-rep", analyses, notes)


def _plain(path: Path) -> Path | None:
    """``path``, or its compressed copy ``path.xz`` / ``path.gz`` (results folders keep large
    exports compressed) decompressed into a temporary file; None when none exists. A damaged
    copy is a ``ResultsFormatError`` naming it."""
    kept = kept_file(path)
    if kept is None or kept == path:
        return kept
    data = read_bytes(kept)
    plain = Path(tempfile.mkdtemp(prefix="sparsescope-analyze-")) / path.name
    plain.write_bytes(data)
    return plain
