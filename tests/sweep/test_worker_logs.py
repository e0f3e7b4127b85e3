"""The worker preload drops only a closing cluster's lost-heartbeat record."""

from __future__ import annotations

import logging

from sparsescope.sweep import worker_logs
from sparsescope.sweep.engine import dask_client


def _record(msg: str, level=logging.ERROR) -> logging.LogRecord:
    return logging.LogRecord("distributed.worker", level, __file__, 1, msg, None, None)


def test_the_lost_heartbeat_record_is_dropped_and_others_kept():
    keep = worker_logs.DropLostHeartbeat().filter
    assert keep(_record("Failed to communicate with scheduler during heartbeat.")) is False
    assert keep(_record("Unexpected exception during heartbeat. Closing worker.")) is True
    assert keep(_record("Compute Failed")) is True


def test_install_adds_the_filter_once():
    name = "sparsescope-test-worker-logs"
    worker_logs.install(name)
    worker_logs.install(name)
    filters = logging.getLogger(name).filters
    assert sum(isinstance(f, worker_logs.DropLostHeartbeat) for f in filters) == 1


#: Sent by value (a lambda), so the worker does not import this module, which imports
#: ``worker_logs`` and would install the filter itself.
_WORKER_FILTERS = lambda: [type(f).__name__  # noqa: E731
                           for f in __import__("logging").getLogger("distributed.worker").filters]


def test_a_local_clusters_workers_load_the_preload():
    with dask_client("local", None, 1, quiet=True) as client:
        answers = client.run(_WORKER_FILTERS)
    assert list(answers.values()) == [["DropLostHeartbeat"]]


def test_the_interrupted_sync_cancel_record_is_dropped_and_others_kept():
    keep = worker_logs.DropInterruptedSync().filter

    def sync():
        def cancel():
            pass
        return cancel

    import functools
    # tornado.application's record: "Exception in callback %r" with the callback as argument
    interrupted = logging.LogRecord("tornado.application", logging.ERROR, __file__, 1,
                                    "Exception in callback %r",
                                    (functools.partial(sync()),), None)
    assert "sync.<locals>.cancel" in interrupted.getMessage()
    assert keep(interrupted) is False
    other = logging.LogRecord("tornado.application", logging.ERROR, __file__, 1,
                              "Exception in callback %r", (functools.partial(print),), None)
    assert keep(other) is True


def test_a_client_installs_the_interrupt_filter_on_its_loop_logger():
    with dask_client("local", None, 1, quiet=True):
        filters = logging.getLogger("tornado.application").filters
    assert sum(isinstance(f, worker_logs.DropInterruptedSync) for f in filters) == 1
