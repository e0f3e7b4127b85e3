"""Worker preload: keep a sweep's end from printing a Dask worker's heartbeat traceback.

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


class DropLostHeartbeat(logging.Filter):
    """Drops the worker's lost-heartbeat record, keeps the rest."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(HEARTBEAT_LOST)


def install(logger_name: str = "distributed.worker") -> None:
    """Add the filter to ``logger_name`` once (a preload may run again on a restarted worker)."""
    logger = logging.getLogger(logger_name)
    if not any(isinstance(f, DropLostHeartbeat) for f in logger.filters):
        logger.addFilter(DropLostHeartbeat())


install()
