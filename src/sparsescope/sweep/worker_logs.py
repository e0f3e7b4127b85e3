"""Worker preload: keep a sweep's end from printing a Dask worker's heartbeat traceback (and,
on the client, the traceback of a ``sync`` call that Ctrl-C interrupted).

When a sweep stops (done, past ``--time-limit``, or Ctrl-C) the client closes its local
cluster; a worker whose heartbeat was already in flight then logs "Failed to communicate with
scheduler during heartbeat" with the ``CommClosedError`` traceback, on the stderr it shares
with the command. That is the cluster going away on purpose, not an error: the sweep reports
its own end. Only that record is dropped; every other worker log line is kept.

Loaded on each worker through ``preload=[__name__]`` (``sweep.engine.dask_client``).
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


class DropLostHeartbeat(logging.Filter):
    """Drops the worker's lost-heartbeat record, keeps the rest."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(HEARTBEAT_LOST)


class DropInterruptedSync(logging.Filter):
    """Drops the client loop's record of an interrupted ``sync`` cancel, keeps the rest."""

    def filter(self, record: logging.LogRecord) -> bool:
        return INTERRUPTED_SYNC not in record.getMessage()


def install(logger_name: str = "distributed.worker", kind: type = DropLostHeartbeat) -> None:
    """Add a ``kind`` filter to ``logger_name`` once (a preload may run again on a restarted
    worker, a sweep may open several clients)."""
    logger = logging.getLogger(logger_name)
    if not any(isinstance(f, kind) for f in logger.filters):
        logger.addFilter(kind())


def install_client() -> None:
    """The client side's filter: the interrupted ``sync`` cancel (``sweep.engine.dask_client``)."""
    install("tornado.application", DropInterruptedSync)


install()
