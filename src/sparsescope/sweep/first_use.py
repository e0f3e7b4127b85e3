"""A sweep worker's device context from one measurement per GPU kind, not one per worker.

Issue 35: on 1, 2 and 4 H100 workers the workers' summed busy time grew from 48.3 s to 61.9 s
and 90.7 s for the same 198 cases: each added worker paid about 14 s of first use on a 53 s
collection, the largest part of it measuring its GPU's ceilings (7-8 s with the library call
costs on an H100) although the client had just measured them on an identical GPU.

Now the client's measurement travels in the :class:`FirstUsePlan` every task of the sweep
carries, keyed by :func:`device_key` (``gpu|NAME|DRIVER``, or ``cpu|MACHINE`` where no GPU
opens); a worker whose device has that key builds its context from it
(``context.present_device(..., ceilings=)``), measuring nothing. A worker of another GPU model
or driver measures once per key and host (:func:`shared_ceilings`): the first takes the host's
lock (``fcntl.flock`` on a file of the sweep's share folder, :func:`share_dir`), measures and
writes the ceilings there; the others wait for the lock and read them. So 4 workers of one GPU
model measure nothing beyond the client, and a host with two GPU models measures each once.

The rest of a worker's first use (its warm-up, the kernels compiled once per host) is
``sweep.warm_up``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparsescope.sweep.tasks import SweepTask

#: Work done in this process, for tests: ``ceilings_measured`` (measured here, once per key
#: and host), ``ceilings_shared`` (read from the host's share folder), ``ceilings_client``
#: (the client's measurement used), ``warm_cases`` (warm cases run here: ``sweep.warm_up``).
COUNTS: Counter = Counter()
_LOCK = threading.Lock()
_INSTALLED: dict[str, Any] = {}
_SOURCES: dict[str, str] = {}


@dataclass(frozen=True)
class FirstUsePlan:
    """What the client hands every worker of a sweep for its first use."""

    sweep_id: str
    """Names the sweep's share folder on each host (:func:`share_dir`)."""
    ceilings: tuple[tuple[str, str], ...] = ()
    """(:func:`device_key`, the ceilings as JSON) the client measured: a worker whose device
    has the key uses them."""
    routes: tuple[tuple[str, str], ...] = ()
    """(library route, its probe backend) whose fixed call cost a worker measures where it
    measures the ceilings itself (``backends.library_probe.routes_for`` of the sweep's
    backends, as the client measured)."""
    warm: tuple[SweepTask, ...] = ()
    """The sweep's warm cases (``warm_up.warm_cases``), dealt out over each host's workers."""

    def given(self, key: str) -> Any:
        """The client's ceilings for ``key`` (a ``MeasuredCeilings``), or None."""
        text = dict(self.ceilings).get(key)
        return None if text is None else decode_ceilings(text)


def device_key() -> str:
    """``gpu|NAME|DRIVER`` of the GPU this process runs on (device 0 of its visible ones), or
    ``cpu|MACHINE`` (``hardware.cpu_ceilings.machine_key``) where no GPU opens: processes
    with one key measure the same ceilings."""
    from sparsescope.hardware.detect import detect_gpu

    gpu = detect_gpu()
    if gpu is not None:
        return f"gpu|{gpu.name}|{gpu.driver}"
    from sparsescope.hardware.cpu_ceilings import machine_key

    return f"cpu|{machine_key()}"


def context_key(context) -> str | None:
    """:func:`device_key` of the device a ``context.DeviceContext`` was measured on, None
    when it holds no measured ceilings (nothing to share)."""
    ceilings = getattr(context, "ceilings", None)
    if ceilings is None or "not_measured" in (ceilings.method or {}):
        return None
    if context.kind == "gpu":
        return f"gpu|{context.detected or ceilings.device}|{context.driver}"
    from sparsescope.hardware.cpu_ceilings import machine_key

    return f"cpu|{machine_key()}"


def encode_ceilings(ceilings) -> str:
    return json.dumps(dataclasses.asdict(ceilings), sort_keys=True)


def decode_ceilings(text: str):
    from sparsescope.hardware.types import MeasuredCeilings

    return MeasuredCeilings(**json.loads(text))


def plan_for(context, backends: Sequence, sweep_id: str | None = None) -> FirstUsePlan:
    """The plan of a sweep whose client measured ``context`` (``api.runs.device_context``)
    for ``backends``: its ceilings under their key, and the library routes the backends
    need (what a worker of another GPU kind measures); ``sweep_id`` a new one by default."""
    import uuid

    from sparsescope.backends.library_probe import routes_for

    sweep_id = sweep_id or uuid.uuid4().hex[:12]
    key = context_key(context)
    shared = ((key, encode_ceilings(context.ceilings)),) if key is not None else ()
    routes = tuple(sorted(routes_for([getattr(b, "name", b) for b in backends]).items()))
    return FirstUsePlan(sweep_id=sweep_id, ceilings=shared, routes=routes)


def share_dir(sweep_id: str) -> Path:
    """This host's folder of the sweep's shared first use (ceilings measured by a worker)."""
    return Path(tempfile.gettempdir()) / f"sparsescope-sweep-{sweep_id}"


def remove_share(plan: FirstUsePlan | None) -> None:
    """Remove this host's share folder of ``plan`` (best effort: the client's host, at the
    sweep's end; another host's folder holds a few kB until its temporary files are swept)."""
    if plan is None:
        return
    import shutil

    shutil.rmtree(share_dir(plan.sweep_id), ignore_errors=True)


@contextlib.contextmanager
def host_lock(path: Path) -> Iterator[None]:
    """An exclusive lock every process of this host that opens ``path`` shares
    (``fcntl.flock``); without ``fcntl`` (not POSIX) no lock: two workers may then each
    measure."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - POSIX only
        yield
        return
    with open(path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def shared_ceilings(plan: FirstUsePlan, key: str, build: Callable[[Any], Any],
                    folder: Path | None = None) -> tuple[Any, str]:
    """``(context, source)`` of this process's device: ``build(ceilings)`` with the client's
    ceilings of ``key`` (``client``), else with those another process of this host wrote
    (``shared``), else ``build(None)``, which measures, its ceilings written for the others
    (``measured``; a measurement that failed is not shared, so the next one tries again)."""
    given = plan.given(key)
    if given is not None:
        COUNTS["ceilings_client"] += 1
        return build(given), "client"
    folder = folder or share_dir(plan.sweep_id)
    name = hashlib.sha256(key.encode()).hexdigest()[:24]
    path = folder / f"ceilings-{name}.json"
    with host_lock(folder / f"ceilings-{name}.lock"):
        try:
            found = decode_ceilings(path.read_text())
        except (OSError, ValueError, TypeError):
            found = None
        if found is not None:
            COUNTS["ceilings_shared"] += 1
            return build(found), "shared"
        context = build(None)
        COUNTS["ceilings_measured"] += 1
        ceilings = getattr(context, "ceilings", None)
        if ceilings is not None and "not_measured" not in (ceilings.method or {}):
            from sparsescope._atomic import write_text_atomic

            write_text_atomic(path, encode_ceilings(ceilings))
    return context, "measured"


def _build_gpu_context(plan: FirstUsePlan | None) -> Callable[[Any], Any]:
    """``build(ceilings)``: the present device's context with ``ceilings``, or measured now
    (with the plan's library routes; every route without a plan, as a worker did before)."""
    from sparsescope.backends.library_probe import library_call_probes
    from sparsescope.context import present_device

    def build(ceilings):
        if ceilings is not None:
            return present_device("gpu", store=False, ceilings=ceilings)
        if plan is None:  # a worker does not know its tasks ahead: every route
            return present_device("gpu", store=False, library_probes=library_call_probes())
        if not plan.routes:
            return present_device("gpu", store=False)
        return present_device("gpu", store=False,
                              library_probes=library_call_probes(dict(plan.routes)))

    return build


def gpu_context(plan: FirstUsePlan | None):
    """The context a worker predicts its GPU cases with: through :func:`shared_ceilings` with
    a plan, measured here without one. Where its ceilings came from is kept
    (:func:`ceilings_source`)."""
    build = _build_gpu_context(plan)
    if plan is None:
        COUNTS["ceilings_measured"] += 1
        return build(None)
    context, source = shared_ceilings(plan, device_key(), build)
    with _LOCK:
        _SOURCES[plan.sweep_id] = source
    return context


def ceilings_source(plan: FirstUsePlan | None) -> str:
    """``client``, ``shared`` or ``measured`` once this process built its GPU context for
    ``plan``'s sweep; ``none`` before (or without a GPU case)."""
    return _SOURCES.get(plan.sweep_id, "none") if plan is not None else "none"


def install(plan: FirstUsePlan | None) -> None:
    """Make ``plan`` this process's sweep plan (every task of the sweep carries it, so a
    worker that joined late or runs a stolen case has it too)."""
    if plan is not None:
        with _LOCK:
            _INSTALLED["plan"] = plan


def installed() -> FirstUsePlan | None:
    return _INSTALLED.get("plan")


def clear() -> None:
    """Forget the plan, the sources and the counts (tests)."""
    with _LOCK:
        _INSTALLED.clear()
        _SOURCES.clear()
        COUNTS.clear()
