"""The Dask cluster a sweep runs on: one it starts (``local``, ``cuda``) or one it joins
(``--scheduler ADDRESS``), and the errors a user can act on when neither works.

Issue 33: ``--scheduler tcp://127.0.0.1:1`` gave a traceback after Dask's 30 s connect timeout,
``--scheduler 'not a url'`` a ``ValueError`` traceback, and a worker killed while the cluster
started a ``Nanny failed to start`` traceback. Now:

* an address that is not one (:func:`check_scheduler_address`) is a
  :class:`~sparsescope.errors.UsageError` (exit 2) before anything runs;
* a scheduler that does not answer within :data:`CONNECT_TIMEOUT_S` (a refused TCP connection
  at once), or a cluster that cannot start, is a :class:`ClusterError` (exit 7) whose one line
  names the address or the cluster and the cause.

The workers of a cluster we start load :data:`WORKER_PRELOAD` (``sweep.worker_logs``): Ctrl-C
is left to the client, and a closing cluster's noise is dropped.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sparsescope.errors import DeviceError, MissingDependencyError, UsageError
from sparsescope.sweep import worker_logs

CLUSTERS = ("local", "cuda")

#: How long joining a running scheduler may take (seconds): the TCP connection, then Dask's
#: handshake. Dask's own default is 30 s, with its retries, for an address that never answers.
CONNECT_TIMEOUT_S = 10.0

#: Imported on each worker of a cluster we start (``sweep.worker_logs``): SIGINT ignored (the
#: client stops the sweep), the lost-heartbeat and cancelled-at-close records dropped.
WORKER_PRELOAD = "sparsescope.sweep.worker_logs"

#: Loggers of the client process that report a failed start-up with a traceback (the nanny's
#: "Failed to start process"); quiet while the cluster starts, since :class:`ClusterError`
#: says it in one line, with the cause.
_STARTUP_LOGGERS = ("distributed.nanny", "distributed.deploy.spec", "distributed.scheduler")


class ClusterError(DeviceError):
    """The Dask cluster could not be started, or the scheduler could not be reached (exit 7:
    no usable device to run the cases on)."""


def import_dask_module(module: str, what: str, extra: str = "sweep"):
    """``module``, or the error naming the pyproject extra that installs it (``sweep``: Dask
    on any machine; ``sweep-cuda``: dask-cuda beside it)."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(
            f"{module} is not installed (needed for {what}); install it with: "
            f"pip install 'sparsescope[{extra}]'") from exc


def check_arguments(cluster: str | None, scheduler: str | None, workers: int | None) -> None:
    """Refuse a cluster kind, worker count or scheduler address that cannot work, before
    anything is planned or written (:class:`UsageError`)."""
    if cluster is not None and cluster not in CLUSTERS:
        raise UsageError(f"unknown cluster {cluster!r}; known: {', '.join(CLUSTERS)}")
    if cluster is not None and scheduler is not None:
        raise UsageError("give a cluster to start or a scheduler to join, not both")
    if workers is not None and (isinstance(workers, bool) or workers < 1):
        raise UsageError(f"--workers must be >= 1, got {workers}")
    if scheduler is not None:
        check_scheduler_address(scheduler)


def check_scheduler_address(address: str) -> tuple[str, str, int | None]:
    """``(scheme, host, port)`` of a Dask scheduler address (``tcp://host:8786``; port None
    for a scheme without one), or :class:`UsageError` saying why it is not an address."""
    import_dask_module("distributed", "a Dask sweep (--scheduler)")
    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import backends

    def refuse(why: str) -> UsageError:
        return UsageError(f"--scheduler {address!r} is not a Dask scheduler address ({why}); "
                          "give one like tcp://HOST:8786")

    if not isinstance(address, str) or not address.strip():
        raise refuse("it is empty")
    try:
        scheme, location = parse_address(address)
    except (ValueError, TypeError) as exc:
        raise refuse(str(exc)) from None
    if scheme not in backends:
        raise refuse(f"unknown scheme {scheme!r}; known: {', '.join(sorted(backends))}")
    if scheme not in ("tcp", "tls"):
        return scheme, location, None
    try:
        host, port = parse_host_port(location)
    except ValueError as exc:
        raise refuse(str(exc)) from None
    if not host or any(ch.isspace() for ch in host):
        raise refuse(f"no host name in {location!r}")
    return scheme, host, int(port)


def _reach(address: str) -> None:
    """Open and close a TCP connection to a ``tcp://`` scheduler within
    :data:`CONNECT_TIMEOUT_S`: a refused connection fails at once, where Dask retries it for
    its whole timeout; other schemes are left to Dask's handshake."""
    import socket

    scheme, host, port = check_scheduler_address(address)
    if scheme != "tcp":
        return
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        why = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        raise ClusterError(f"cannot reach the Dask scheduler at {address} ({why}); is it "
                           "running, and is the address right?") from None


@contextmanager
def _quiet(names: tuple[str, ...], level: int = logging.CRITICAL) -> Iterator[None]:
    """Raise the level of the loggers ``names`` while the block runs (restored after)."""
    loggers = [logging.getLogger(name) for name in names]
    before = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(level)
    try:
        yield
    finally:
        for logger, old in zip(loggers, before, strict=True):
            logger.setLevel(old)


def _cause(exc: BaseException) -> str:
    """The exception and, where Dask wrapped one, its cause: ``Nanny failed to start. (...)``."""
    text = f"{exc}".strip() or type(exc).__name__
    inner = exc.__cause__ or exc.__context__
    if inner is not None and str(inner) and str(inner) not in text:
        text += f" ({type(inner).__name__}: {inner})"
    return text


def start_cluster(cluster: str, workers: int | None) -> Any:
    """A new ``LocalCluster`` (``workers`` single-thread processes, default 2) or
    ``LocalCUDACluster`` (one worker per GPU, or ``workers`` of them), its workers preloading
    :data:`WORKER_PRELOAD`; a start-up failure is a :class:`ClusterError`."""
    import dask

    distributed = import_dask_module("distributed", "a Dask sweep (--cluster)")
    settings = scheduler_settings()
    try:
        with dask.config.set(settings), _quiet(_STARTUP_LOGGERS):
            if cluster == "cuda":
                dask_cuda = import_dask_module("dask_cuda", "--cluster cuda",
                                               extra="sweep-cuda")
                return dask_cuda.LocalCUDACluster(
                    preload=[WORKER_PRELOAD], **({"n_workers": workers} if workers else {}))
            return distributed.LocalCluster(n_workers=workers or 2, threads_per_worker=1,
                                            processes=True, dashboard_address=":0",
                                            preload=[WORKER_PRELOAD])
    except MissingDependencyError:
        raise
    except Exception as exc:  # noqa: BLE001 (Dask's start-up raises RuntimeError, OSError, ...)
        raise ClusterError(f"the Dask {cluster} cluster could not start: {_cause(exc)}"
                           ) from None


def _join(distributed, scheduler: str) -> Any:
    """A client of the scheduler at ``scheduler``, or :class:`ClusterError` within
    :data:`CONNECT_TIMEOUT_S`."""
    _reach(scheduler)
    try:
        with _quiet(("distributed.client", "distributed.comm", "distributed.core")):
            return distributed.Client(scheduler, timeout=CONNECT_TIMEOUT_S)
    except Exception as exc:  # noqa: BLE001 (OSError, TimeoutError, a handshake's error)
        raise ClusterError(f"cannot join the Dask scheduler at {scheduler} within "
                           f"{CONNECT_TIMEOUT_S:g} s: {_cause(exc)}") from None


@contextmanager
def dask_client(cluster: str | None, scheduler: str | None, workers: int | None,
                quiet: bool = False) -> Iterator[Any]:
    """A ``distributed.Client`` on a new local (CUDA) cluster or the one at ``scheduler``;
    its dashboard address printed on stderr unless ``quiet``. Closing it closes the cluster
    we started (Ctrl-C included: its workers ignore SIGINT and end with it)."""
    distributed = import_dask_module("distributed", "a Dask sweep (--cluster, --scheduler)")
    owned = None
    if scheduler is None:
        owned = start_cluster(cluster or "local", workers)
    worker_logs.install_client()  # Ctrl-C is reported by the sweep, not as a loop traceback
    try:
        client = distributed.Client(owned) if owned is not None else _join(distributed,
                                                                           scheduler)
    except BaseException:
        if owned is not None:
            owned.close()
        raise
    try:
        if not quiet:
            print(f"sparsescope: Dask dashboard: {client.dashboard_link}", file=sys.stderr,
                  flush=True)
        yield client
    finally:
        client.close()
        if owned is not None:
            owned.close()


def scheduler_settings() -> dict[str, Any]:
    """The Dask settings of a cluster we start (the scheduler reads them when it starts):

    * ``allowed-failures``: one worker death per case, then ``KilledWorker``
      (:func:`allowed_failures`);
    * ``work-stealing`` off: a case runs where its matrix was probed (``sweep.dask_loop``:
      a data dependency on the probe), and the engine's lanes, one matrix per worker at a
      time, balance the work. Stolen by an idle worker, a case loaded its matrix again and
      built again what the matrix's other cases share (the float64 reference, the model's
      per-matrix work, auto's candidate predictions): on two H200s
      (``results/h200/sweep-gpus/2026-11-28-held-out-half``) the same 90 cases took 16.6 s
      of prediction on two workers against 1.75 s on one, and the workers' busy time grew
      37 %.

    A scheduler the sweep joins (``--scheduler``) keeps its own settings."""
    return {"distributed.scheduler.allowed-failures": allowed_failures(),
            "distributed.scheduler.work-stealing": False}


def allowed_failures() -> int:
    """Worker deaths a case may cause on a cluster we start before it is failed
    (``KilledWorker``): one, as docs/SWEEP.md says ("retried once elsewhere"), or fewer when
    Dask's configuration says so. Dask's default, 3, let one case kill four workers."""
    import dask

    return min(1, int(dask.config.get("distributed.scheduler.allowed-failures", 1)))
