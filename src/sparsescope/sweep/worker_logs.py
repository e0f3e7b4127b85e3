"""Worker preload: keep a sweep's end from printing a Dask worker's heartbeat traceback (and,
on the client, the traceback of a ``sync`` call that Ctrl-C interrupted).

When a sweep stops (done, past ``--time-limit``, or Ctrl-C) the client closes its local
cluster; a worker whose heartbeat was already in flight then logs "Failed to communicate with
scheduler during heartbeat" with the ``CommClosedError`` traceback, on the stderr it shares
with the command. That is the cluster going away on purpose, not an error: the sweep reports
its own end. Only that record is dropped; every other worker log line is kept.

Ctrl-C at a terminal reaches the whole process group: the client and every worker process of
a local cluster. Each worker's asyncio runner then died with its own ``KeyboardInterrupt``
traceback (four of them on a 2-worker sweep). A worker of a cluster we start ignores SIGINT
(:func:`dask_setup`): the client stops the sweep and closes the cluster, which ends the workers;
the records a worker logs for the tasks that closing cancels are dropped too.

Loaded on each worker through ``preload=[__name__]`` (``sweep.cluster.dask_client``).
"""

from __future__ import annotations

import logging

#: The message ``distributed.worker.Worker.heartbeat`` logs when the scheduler is gone.
HEARTBEAT_LOST = "Failed to communicate with scheduler during heartbeat"


#: What the client's event loop logs (logger ``tornado.application``) when Ctrl-C reaches
#: ``distributed.utils.sync`` while it waits: the cancel callback it schedules fails on the
#: loop the interrupt is closing ("Exception in callback functools.partial(<function
#: sync.<locals>.cancel ...>)" with a traceback). The sweep reports the interrupt itself.
INTERRUPTED_SYNC = "sync.<locals>.cancel"


#: What a worker's state machine logs for each task still running when the worker closes
#: (distributed's own comment: "This should exclusively happen in Worker.close()"): the sweep
#: closing its cluster after Ctrl-C or its time limit, not an error.
CANCELLED_AT_CLOSE = "ended with CancelledError"


class DropLostHeartbeat(logging.Filter):
    """Drops the worker's lost-heartbeat record, keeps the rest."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(HEARTBEAT_LOST)


#: What asyncio logs when the client gave up fetching a result whose worker died (the bounded
#: wait of ``sweep.dask_loop``): Dask's internal ``AllExit`` of the abandoned gather.
ABANDONED_GATHER = "exception=AllExit()"


class DropAbandonedGather(logging.Filter):
    """Drops asyncio's record of the abandoned gather, keeps the rest."""

    def filter(self, record: logging.LogRecord) -> bool:
        return ABANDONED_GATHER not in record.getMessage()


#: What the scheduler (in the client's process, for a cluster we start) logs, with a
#: traceback, when a worker's connection closes under a message it was sending: a closing
#: cluster, or a worker that died (which the sweep reports as the case's failure).
BATCHED_CLOSED = "Batched Comm Closed"


class DropBatchedClosed(logging.Filter):
    """Drops the closed-connection record of the scheduler's batched stream."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(BATCHED_CLOSED)


class DropInterruptedSync(logging.Filter):
    """Drops the client loop's record of an interrupted ``sync`` cancel, keeps the rest."""

    def filter(self, record: logging.LogRecord) -> bool:
        return INTERRUPTED_SYNC not in record.getMessage()


class DropCancelledAtClose(logging.Filter):
    """Drops the record of a task cancelled by the worker's close, keeps the rest."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        return not (message.startswith("Async instruction") and
                    message.endswith(CANCELLED_AT_CLOSE))


def install(logger_name: str = "distributed.worker", kind: type = DropLostHeartbeat) -> None:
    """Add a ``kind`` filter to ``logger_name`` once (a preload may run again on a restarted
    worker, a sweep may open several clients)."""
    logger = logging.getLogger(logger_name)
    if not any(isinstance(f, kind) for f in logger.filters):
        logger.addFilter(kind())


def ignore_interrupt() -> None:
    """SIGINT ignored by this process (a worker of a cluster the sweep started; only the main
    thread may set a handler, and a worker's event loop runs there)."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def dask_setup(worker) -> None:
    """Dask's preload hook, run in each worker process as it starts (a restarted one too):
    Ctrl-C is left to the client, which closes the cluster (see the module docstring)."""
    ignore_interrupt()
    install()
    install("distributed.worker.state_machine", DropCancelledAtClose)


def install_client() -> None:
    """The client side's filters: the interrupted ``sync`` cancel, the abandoned gather, the
    scheduler's closed worker stream (``sweep.cluster.dask_client``)."""
    install("tornado.application", DropInterruptedSync)
    install("asyncio", DropAbandonedGather)
    install("distributed.batched", DropBatchedClosed)


install()
