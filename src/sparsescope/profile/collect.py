"""Run a case under Nsight Compute (``ncu``): find the binary, build the command line, run it,
turn ncu's messages and exit code into specific errors, and export the report's CSV pages.

ncu writes ``==PROF==``, ``==WARNING==`` and ``==ERROR==`` lines into the same streams as the
profiled program; :func:`interpret_ncu_output` reads those. The texts it looks for are ncu's own:

- ``==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU
  Performance Counters on the target device 0. ...``
- ``==ERROR== The application returned an error code (1).``
- ``==WARNING== No kernels were profiled.`` (followed, when a filter matched nothing, by
  ``Available Kernels:`` and a numbered list)
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import time
import warnings
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from sparsescope._atomic import write_text_atomic
from sparsescope._tools import find_tool, searched_places
from sparsescope.errors import UnknownNameError, UsageError
from sparsescope.profile.errors import ProfileError
from sparsescope.profile.kernel_selection import KernelSelection
from sparsescope.profile.metrics import DEFAULT_GROUPS, METRIC_GROUPS, group_metrics

CLOCK_CONTROLS = ("base", "none")
CACHE_CONTROLS = ("all", "none")
NAME_BASES = ("function", "demangled", "mangled")
SECTION_SETS = ("basic", "detailed", "full")

PERMISSION_MARK = "ERR_NVGPUCTRPERM"
NO_KERNELS_MARK = "No kernels were profiled"
_APP_ERROR = re.compile(r"The application returned an error code \((-?\d+)\)")
_AVAILABLE = re.compile(r"^\s*\d+\.\s+(\S.*)$")
#: ``==PROF== Profiling "spmv_tile": 0%....50%....100% - 8 passes`` (older versions write
#: ``"name" - 0: 0%...``): one line per profiled launch.
_PASSES = re.compile(r'^==PROF== Profiling "([^"]+)".*?-\s*(\d+)\s+pass(?:es)?\s*$')


def passes_from_output(text: str) -> tuple[tuple[str, int], ...]:
    """(kernel, replay passes) of each profiled launch, in order, from ncu's output."""
    found = []
    for line in text.splitlines():
        match = _PASSES.match(line.strip())
        if match:
            found.append((match.group(1), int(match.group(2))))
    return tuple(found)


def find_ncu() -> Path | None:
    """The ncu binary, found as every CUDA tool is (:func:`sparsescope._tools.find_tool`:
    ``$SPARSESCOPE_NCU``, PATH, CUDA_HOME/CUDA_PATH, toolkits and Nsight Compute installs newest
    version first); None when there is none."""
    return find_tool("ncu")


@dataclass(frozen=True)
class CollectOptions:
    """What ncu collects and from which launches; each field maps to one ncu option."""

    groups: tuple[str, ...] = DEFAULT_GROUPS
    """Metric groups (:data:`~sparsescope.profile.metrics.METRIC_GROUPS`); ignored with a set."""
    section_set: str | None = None
    """``--set`` (e.g. ``full``) instead of the groups."""
    kernel_filter: str | None = None
    """``--kernel-name``: a name, or ``regex:<expression>``."""
    kernel_name_base: str = "function"
    """``--kernel-name-base``: what the filter matches (function, demangled, mangled)."""
    launch_skip: int = 0
    """``--launch-skip``: matching launches to skip first (e.g. warm-up calls)."""
    launch_count: int | None = None
    """``--launch-count``: matching launches to profile; None profiles all."""
    profile_from_start: bool = True
    """False: ``--profile-from-start off``, only launches inside the program's profiler range
    (``cudaProfilerStart``/``Stop``; the target's ``--profile-call``) are profiled."""
    clock_control: str = "base"
    """``--clock-control``: ``base`` locks clocks to base (repeatable), ``none`` leaves them."""
    cache_control: str = "all"
    """``--cache-control``: ``all`` flushes caches before each replay pass, ``none`` keeps them."""
    import_source: bool = True
    """``--import-source yes``: store CUDA source in the report (needs -lineinfo)."""
    extra_args: tuple[str, ...] = ()
    """Further ncu options, passed as given."""

    def __post_init__(self) -> None:
        for name in self.groups:
            if name not in METRIC_GROUPS:
                raise UnknownNameError("metric group", name, list(METRIC_GROUPS))
        if self.section_set is None and not self.groups:
            raise UsageError("give at least one metric group or a section set")
        for value, allowed, what in ((self.clock_control, CLOCK_CONTROLS, "clock control"),
                                     (self.cache_control, CACHE_CONTROLS, "cache control"),
                                     (self.kernel_name_base, NAME_BASES, "kernel name base")):
            if value not in allowed:
                raise UnknownNameError(what, value, allowed)
        if self.section_set is not None and self.section_set not in SECTION_SETS:
            raise UnknownNameError("section set", self.section_set, SECTION_SETS)
        if self.launch_skip < 0:
            raise UsageError(f"launch skip must be >= 0, got {self.launch_skip}")
        if self.launch_count is not None and self.launch_count < 1:
            raise UsageError(f"launch count must be >= 1, got {self.launch_count}")

    def collected(self) -> dict:
        """What ncu collects, for the record: ``{"set", "groups", "sections"}`` (the section
        set, or the metric groups and the ncu sections they add)."""
        if self.section_set is not None:
            return {"set": self.section_set, "groups": [], "sections": []}
        return {"set": None, "groups": list(self.groups),
                "sections": list(group_metrics(self.groups)[1])}

    @property
    def collects_source(self) -> bool:
        """Whether the report will hold per-instruction counters (source page worth exporting)."""
        if self.section_set == "full":
            return True
        return self.section_set is None and "SourceCounters" in group_metrics(self.groups)[1]


def build_ncu_command(ncu: str | Path, report_path: str | Path, target: Sequence[str],
                      options: CollectOptions) -> list[str]:
    """The full ``ncu ... <target>`` command line."""
    cmd = [str(ncu), "--export", str(report_path), "--force-overwrite",
           "--target-processes", "all",
           "--clock-control", options.clock_control, "--cache-control", options.cache_control]
    if options.section_set is not None:
        cmd += ["--set", options.section_set]
    else:
        metrics, sections = group_metrics(options.groups)
        cmd += ["--metrics", ",".join(metrics)]
        for section in sections:
            cmd += ["--section", section]
    if options.kernel_filter:
        cmd += ["--kernel-name-base", options.kernel_name_base,
                "--kernel-name", options.kernel_filter]
    if options.launch_skip:
        cmd += ["--launch-skip", str(options.launch_skip)]
    if options.launch_count is not None:
        cmd += ["--launch-count", str(options.launch_count)]
    if not options.profile_from_start:
        cmd += ["--profile-from-start", "off"]
    if options.import_source:
        cmd += ["--import-source", "yes"]
    return cmd + list(options.extra_args) + list(target)


def export_command(ncu: str | Path, report_path: str | Path, page: str) -> list[str]:
    """``ncu --import R --csv --page <raw|details|source>``; numbers in base units and as full
    floats (``--print-fp``: without it ncu 2025.3 rounds ratios to two decimals, seen on the
    H200 run: CPI 38.92 for 38.921...), the source page as SASS."""
    cmd = [str(ncu), "--import", str(report_path), "--csv", "--page", page]
    if page == "source":
        return cmd + ["--print-source", "sass"]
    if page in ("raw", "details"):
        return cmd + ["--print-units", "base", "--print-fp"]
    raise UsageError(f"unknown ncu page {page!r}; known: raw, details, source")


def op_backend_names(op: str) -> list[str]:
    """Backends registered for ``op``, sorted (the registry table's (op, name) keys)."""
    from sparsescope import registry

    return registry.backend_names(op)


def check_backend_op(backend: str, op: str) -> None:
    """Raise :class:`UsageError` (naming both) unless ``backend`` (a registry name or a variant
    ``NAME[opt=value,...]``, whose options must build) implements ``op``."""
    from sparsescope import registry
    from sparsescope.backends.variants import backend_choice

    backend = backend_choice(backend).name
    registry.op_entry(op)
    names = op_backend_names(op)
    if backend in names:
        return
    if backend not in registry.backend_names():
        raise UnknownNameError(f"{op} backend", backend, names)
    raise UsageError(f"backend {backend!r} does not support op {op!r} (it implements "
                     f"{registry.backend_op(backend)}); backends for {op}: {', '.join(names)}")


def resolve_op_params(op: str, params: Mapping[str, object] | None = None) -> dict[str, object]:
    """The case's parameters with the op's defaults filled in and checked (None values, such as
    slice's unset ``rows``, dropped); ``{}`` for SpMV, which has none."""
    from sparsescope.ops.registry import get_op

    return get_op(op).resolve_params(params).as_dict()


def _param_text(value: object) -> str:
    # the target reads a comma list as a sequence of integers (slice's ``rows``)
    if isinstance(value, (tuple, list)):
        return ",".join(str(int(v)) for v in value)
    return str(value)


#: The one target program ncu profiles (:mod:`sparsescope.target`), run as a module.
TARGET_MODULE = "sparsescope.target"


def target_argv(*parts: str) -> list[str]:
    """The command line that runs the target program with ``parts`` (``case ...``)."""
    import sys

    return [sys.executable, "-m", TARGET_MODULE, *parts]


def target_command(suite: str, matrix: str, backend: str, *, op: str = "spmv",
                   scale: float = 1.0, params: Mapping[str, object] | None = None,
                   one_call: bool = False) -> list[str]:
    """The program ncu profiles: one case through ``python -m sparsescope.target case``, with
    every parameter spelled out (defaults filled in), prepared, run once and checked against
    float64, not timed: ncu replays each launch itself, and the timing protocol's kernel
    breakdown would compete with ncu for CUPTI. ``one_call``: the checked call runs inside a
    profiler range (``--profile-call``; ncu then needs ``--profile-from-start off``). A
    backend that does not implement ``op`` is a :class:`UsageError`, before ncu starts."""
    check_backend_op(backend, op)
    command = target_argv("case", "--op", op, "--suite", suite, "--matrix", matrix,
                          "--backend", backend, "--scale", repr(scale))
    for name, value in resolve_op_params(op, params).items():
        command += ["--param", f"{name}={_param_text(value)}"]
    return command + ["--check-only"] + (["--profile-call"] if one_call else [])


def selected_options(selection: KernelSelection, **given: object) -> CollectOptions:
    """:class:`CollectOptions` of ``given`` (None values: the defaults) with the selection's name
    filter, its name base and its scope (``--profile-from-start off`` for one call)."""
    chosen = {k: v for k, v in given.items() if v is not None}
    return CollectOptions(**chosen, kernel_filter=selection.kernel_filter,
                          kernel_name_base=selection.name_base,
                          profile_from_start=not selection.one_call)


@dataclass(frozen=True)
class NcuResult:
    """What one ncu invocation returned."""

    command: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + ("\n" if self.stdout and self.stderr else "") + self.stderr


def run_ncu(command: Sequence[str], *, timeout_s: float | None = None,
            env: Mapping[str, str] | None = None) -> NcuResult:
    try:
        done = subprocess.run(list(command), capture_output=True, text=True, errors="replace",
                              timeout=timeout_s, env=None if env is None else dict(env))
    except FileNotFoundError as exc:
        raise ProfileError("ncu_not_found", f"cannot execute {command[0]}: {exc}") from exc
    except subprocess.TimeoutExpired as exc:
        raise ProfileError("ncu_failed", f"ncu did not finish within {timeout_s} s: "
                           f"{' '.join(command[:6])} ...") from exc
    return NcuResult(tuple(command), done.returncode, done.stdout, done.stderr)


def _program_output(text: str, lines: int = 15) -> str:
    kept = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("==")]
    return "\n".join(kept[-lines:])


def interpret_ncu_output(result: NcuResult, report_path: str | Path,
                         kernel_filter: str | None = None) -> None:
    """Raise :class:`ProfileError` for each failure ncu reports; return when the report exists.

    Checked in this order because ncu prints "No kernels were profiled" after the other two:
    counter permission, the profiled program's failure, nothing matched, other ncu errors."""
    text = result.output
    error_lines = [ln.strip() for ln in text.splitlines() if ln.startswith("==ERROR==")]
    if PERMISSION_MARK in text:
        line = next((ln for ln in text.splitlines() if PERMISSION_MARK in ln), PERMISSION_MARK)
        raise ProfileError("permission", (
            f"no permission to read the GPU performance counters: {line.strip()} "
            "Fix: let non-admin users profile (driver option "
            "NVreg_RestrictProfilingToAdminUsers=0, see https://developer.nvidia.com/"
            "ERR_NVGPUCTRPERM), run as root, or start the container with --cap-add=SYS_ADMIN."))
    app = _APP_ERROR.search(text)
    if app:
        tail = _program_output(text)
        raise ProfileError("target_failed", (
            f"the profiled program failed (exit code {app.group(1)})"
            + (f"; its last output:\n{tail}" if tail else "")))
    if NO_KERNELS_MARK in text:
        after = text[text.index(NO_KERNELS_MARK):].splitlines()[1:]
        available = [m.group(1) for m in map(_AVAILABLE.match, after) if m]
        if kernel_filter:
            msg = f"no kernel launch matched the filter {kernel_filter!r} (ncu: {NO_KERNELS_MARK})"
        else:
            msg = f"ncu profiled no kernel ({NO_KERNELS_MARK}): the program launched none"
        if available:
            msg += "; kernels the program launched: " + ", ".join(available)
        raise ProfileError("no_kernels", msg, available=tuple(available))
    if result.returncode != 0 or error_lines:
        detail = "\n".join(error_lines) or _program_output(text) or "(no output)"
        raise ProfileError("ncu_failed", f"ncu exited with code {result.returncode}:\n{detail}")
    if not Path(report_path).is_file():
        raise ProfileError("ncu_failed", f"ncu exited 0 but wrote no report at {report_path}")


@dataclass(frozen=True)
class ProfileRun:
    """Files one profiling run wrote, and how."""

    report_path: Path
    raw_csv: Path
    details_csv: Path
    source_csv: Path | None
    """None when the run collected no per-instruction counters, or the export failed."""
    log_path: Path
    """ncu's and the program's output during profiling."""
    command: tuple[str, ...]
    ncu_version: str = ""
    notes: dict[str, str] = field(default_factory=dict, compare=False)
    passes: tuple[tuple[str, int], ...] = ()
    """(kernel, ncu replay passes) per profiled launch, from ncu's ``==PROF==`` lines."""
    profile_wall_s: float | None = None
    """Wall time of the profiling run (the program under ncu), s."""
    export_wall_s: float | None = None
    """Wall time of the CSV exports and the version query (run side by side), s."""
    selection: KernelSelection | None = None
    """Which launches were profiled and why (:func:`run_selected`); None when not recorded."""


def ncu_version(ncu: str | Path) -> str:
    """The ``Version ...`` line of ``ncu --version``, or empty."""
    result = run_ncu([str(ncu), "--version"], timeout_s=60)
    return next((ln.strip() for ln in result.stdout.splitlines() if "Version" in ln), "")


def _export(ncu: Path, report: Path, page: str, dest: Path, timeout_s: float | None) -> Path:
    result = run_ncu(export_command(ncu, report, page), timeout_s=timeout_s)
    errors = [ln for ln in result.output.splitlines() if ln.startswith("==ERROR==")]
    if result.returncode != 0 or errors or not result.stdout.strip():
        raise ProfileError("ncu_failed", f"exporting the {page} page failed (code "
                           f"{result.returncode}): " + ("\n".join(errors) or result.stderr.strip()
                                                       or "empty output"), path=str(report))
    return write_text_atomic(dest, result.stdout)


def run_profile(target: Sequence[str], out_dir: str | Path, stem: str, options: CollectOptions,
                *, ncu: str | Path | None = None, timeout_s: float | None = None,
                env: Mapping[str, str] | None = None) -> ProfileRun:
    """Profile ``target`` and write ``<stem>.ncu-rep``, ``<stem>_raw.csv``,
    ``<stem>_details.csv``, ``<stem>_source.csv`` (when source counters were collected) and
    ``<stem>.ncu.log`` into ``out_dir``. ``ncu`` defaults to :func:`find_ncu`; ``env`` is
    the environment ncu and the profiled program run in (None: this process's)."""
    binary = Path(ncu) if ncu is not None else find_ncu()
    if binary is None:
        raise ProfileError("ncu_not_found", (
            f"ncu (Nsight Compute) not found ({searched_places('ncu')}); install Nsight "
            "Compute, or pass its path (--ncu) or set $SPARSESCOPE_NCU"))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    report = out / f"{stem}.ncu-rep"
    command = build_ncu_command(binary, report, target, options)
    started = time.perf_counter()
    result = run_ncu(command, timeout_s=timeout_s, env=env)
    profile_wall_s = time.perf_counter() - started
    log = write_text_atomic(out / f"{stem}.ncu.log", "$ " + " ".join(command) + "\n"
                            + result.output)
    interpret_ncu_output(result, report, options.kernel_filter)
    started = time.perf_counter()
    pages = ["raw", "details"] + (["source"] if options.collects_source else [])
    # each export is its own ncu process reading the report: side by side, their wall time is
    # the longest one's, not the sum (a second or more each)
    with ThreadPoolExecutor(max_workers=len(pages) + 1) as pool:
        exports = {page: pool.submit(_export, binary, report, page,
                                     out / f"{stem}_{page}.csv", timeout_s) for page in pages}
        version = pool.submit(ncu_version, binary)
        raw, details = exports["raw"].result(), exports["details"].result()
        source, notes = None, {}
        if "source" in exports:
            try:
                source = exports["source"].result()
            except ProfileError as exc:  # the report itself is fine; keep it, say what is missing
                notes["source"] = str(exc)
                warnings.warn(f"source page not exported: {exc}", stacklevel=2)
        ncu_text = version.result()
    return ProfileRun(report, raw, details, source, log, tuple(command), ncu_text, notes,
                      passes=passes_from_output(result.output), profile_wall_s=profile_wall_s,
                      export_wall_s=time.perf_counter() - started)


def run_selected(target: Sequence[str], out_dir: str | Path, stem: str, options: CollectOptions,
                 selection: KernelSelection, *, ncu: str | Path | None = None,
                 timeout_s: float | None = None,
                 env: Mapping[str, str] | None = None) -> ProfileRun:
    """:func:`run_profile` of the launches ``selection`` chose (``options`` built by
    :func:`selected_options`), the selection recorded on the run. A name filter derived from
    the backend that matched none of the launches ncu saw is dropped and the case profiled
    again, every launch of the call (the reason and the kernels ncu listed kept in the
    selection); a user's filter that matches nothing stays an error."""
    try:
        run = run_profile(target, out_dir, stem, options, ncu=ncu, timeout_s=timeout_s, env=env)
    except ProfileError as exc:
        if exc.reason != "no_kernels" or not selection.derived or not exc.available:
            raise
        shown = ", ".join(exc.available[:8]) + (", ..." if len(exc.available) > 8 else "")
        selection = selection.without_names(f"{selection.kernel_filter} matched none of the "
                                            f"launches ncu saw: {shown}")
        options = replace(options, kernel_filter=None, kernel_name_base="function")
        run = run_profile(target, out_dir, stem, options, ncu=ncu, timeout_s=timeout_s, env=env)
    return replace(run, selection=selection)


def profile_stem(suite: str, matrix: str, backend: str,
                 params: Mapping[str, object] | None = None) -> str:
    """File stem of a case's profile: ``profile_<suite>_<matrix>_<backend>``, then
    ``_<name>-<value>`` for each op parameter (so ``k=8`` and ``k=64`` keep separate files; a
    row list as its count and digest), filename-safe."""
    parts = [suite, matrix, backend]
    for name, value in (params or {}).items():
        if isinstance(value, (tuple, list)):
            text = _param_text(value)
            value = f"{len(value)}-{hashlib.sha1(text.encode()).hexdigest()[:12]}"
        parts.append(f"{name}-{value}")
    return "profile_" + "_".join(re.sub(r"[^A-Za-z0-9.+-]+", "-", part) for part in parts)
