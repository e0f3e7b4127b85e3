"""The worker preload drops only a closing cluster's lost-heartbeat record."""

from __future__ import annotations

import logging
import signal

from sparsescope.sweep import worker_logs
from sparsescope.sweep.cluster import dask_client


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


#: The worker's SIGINT handler, by value for the same reason.
_WORKER_SIGINT = lambda: str(__import__("signal").getsignal(2))  # noqa: E731


def test_a_local_clusters_workers_load_the_preload():
    with dask_client("local", None, 1, quiet=True) as client:
        answers = client.run(_WORKER_FILTERS)
        interrupt = client.run(_WORKER_SIGINT)
        machine = client.run(lambda: [type(f).__name__ for f in __import__("logging")
                                      .getLogger("distributed.worker.state_machine").filters])
    assert list(answers.values()) == [["DropLostHeartbeat"]]
    # Ctrl-C reaches every process of the terminal's group: a worker leaves it to the client
    assert list(interrupt.values()) == [str(signal.SIG_IGN)]
    assert list(machine.values()) == [["DropCancelledAtClose"]]


def test_a_task_cancelled_by_the_closing_worker_is_dropped_and_others_kept():
    keep = worker_logs.DropCancelledAtClose().filter
    closing = ("Async instruction for <Task cancelled name=\"execute('run_task-1')\"> ended "
               "with CancelledError")
    assert keep(_record(closing, logging.WARNING)) is False
    assert keep(_record("Unhandled exception in async instruction for <Task>")) is True
    assert keep(_record("Async instruction for <Task> ended with KeyError")) is True


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


def test_the_client_drops_only_the_closing_noise_of_its_own_cluster():
    gather = worker_logs.DropAbandonedGather().filter
    abandoned = logging.LogRecord("asyncio", logging.ERROR, __file__, 1,
                                  "Task exception was never retrieved\nfuture: <Task finished "
                                  "coro=<wait()> exception=AllExit()>", None, None)
    assert gather(abandoned) is False
    assert gather(_record("Task exception was never retrieved: KeyError()")) is True
    batched = worker_logs.DropBatchedClosed().filter
    assert batched(_record("Batched Comm Closed <TCP (closed) Scheduler connection>",
                           logging.INFO)) is False
    assert batched(_record("Error in batched write", logging.ERROR)) is True
