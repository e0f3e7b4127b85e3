"""The Dask cluster a sweep starts or joins (issue 33): an address that is not one, a scheduler
that cannot be reached and a cluster that cannot start are one line and an exit code, no
traceback, and the wait to connect is bounded. CPU timings sharing cores are warned of."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sweep_builders import write_collection

from sparsescope import api
from sparsescope.cli import main
from sparsescope.errors import UsageError
from sparsescope.sweep import cluster, engine, host_cores
from sparsescope.sweep.cluster import ClusterError

HERE = Path(__file__).parent


def _sweep_args(tmp_path: Path, *extra: str) -> list[str]:
    folder = write_collection(tmp_path / "c", 1)
    return ["sweep", str(folder), "--out", str(tmp_path / "o"), "--backend", "scipy-cpu",
            "--warmups", "0", "--repeats", "2", "--flush", "off", *extra]


@pytest.mark.parametrize("address", ["foo", "not a url", "tcp://", "tcp://:8786",
                                     "nosuch://host:1"])
def test_an_address_that_is_not_one_is_a_usage_error_before_anything_runs(
        tmp_path, store, capsys, address):
    code = main(_sweep_args(tmp_path, "--scheduler", address))
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"--scheduler {address!r} is not a Dask scheduler address" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o" / "results.json").exists()


def _closed_port() -> int:
    """A local TCP port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_scheduler_that_refuses_is_one_line_and_exit_7_without_dasks_retries(
        tmp_path, store, capsys, monkeypatch):
    import distributed

    def never(*args, **kwargs):
        raise AssertionError("Dask's client was asked to connect (it retries for 30 s)")

    monkeypatch.setattr(distributed, "Client", never)
    address = f"tcp://127.0.0.1:{_closed_port()}"
    code = main(_sweep_args(tmp_path, "--scheduler", address))
    err = capsys.readouterr().err
    assert code == 7, err
    (line,) = err.strip().splitlines()
    assert line.startswith(f"sparsescope: error: cannot reach the Dask scheduler at {address}")
    assert "refused" in line


def test_a_scheduler_that_never_answers_times_out_at_the_connect_limit(monkeypatch):
    waited: list[float] = []

    def silent(address, timeout):
        waited.append(timeout)
        raise TimeoutError("timed out")

    monkeypatch.setattr(socket, "create_connection", silent)
    with pytest.raises(ClusterError, match=r"cannot reach .* \(timed out\)"):
        cluster._reach("tcp://192.0.2.1:8786")  # TEST-NET-1: routed nowhere
    assert waited == [cluster.CONNECT_TIMEOUT_S] and cluster.CONNECT_TIMEOUT_S <= 10


def test_a_port_that_answers_but_is_no_scheduler_fails_within_the_limit(monkeypatch):
    import distributed

    seen: dict = {}

    def client(address, timeout):
        seen.update(address=address, timeout=timeout)
        raise OSError(f"Timed out during handshake while connecting to {address}")

    monkeypatch.setattr(cluster, "_reach", lambda address: None)
    monkeypatch.setattr(distributed, "Client", client)
    with pytest.raises(ClusterError, match="cannot join the Dask scheduler at tcp://h:1 "
                                           "within 10 s: Timed out during handshake"):
        with cluster.dask_client(None, "tcp://h:1", None, quiet=True):
            pass
    assert seen == {"address": "tcp://h:1", "timeout": cluster.CONNECT_TIMEOUT_S}


STARTUP_SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {here!r})
    from sparsescope.cli import main
    from sparsescope.sweep import cluster
    cluster.WORKER_PRELOAD = "dying_preload"  # every worker dies while it starts
    sys.exit(main({args!r}))
""")


@pytest.mark.slow
def test_a_cluster_whose_workers_die_while_it_starts_is_one_line_and_exit_7(tmp_path, store):
    args = _sweep_args(tmp_path, "--cluster", "local", "--workers", "2")
    proc = subprocess.run([sys.executable, "-c", STARTUP_SCRIPT.format(here=str(HERE),
                                                                       args=args)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 7, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines == [lines[0]] and lines[0].startswith(
        "sparsescope: error: the Dask local cluster could not start: Nanny failed to start")


def test_cluster_arguments_are_checked_before_the_sweep_plans_anything(tmp_path):
    with pytest.raises(UsageError, match="not both"):
        api.sweep(["nothing-here"], out_dir=tmp_path / "o", cluster="local",
                  scheduler="tcp://h:1")
    with pytest.raises(UsageError, match="--workers must be >= 1"):
        api.sweep(["nothing-here"], out_dir=tmp_path / "o", cluster="local", workers=0)
    assert not (tmp_path / "o").exists()


class _Client:
    """What ``host_cores.host_load`` asks of a Dask client."""

    def __init__(self, workers: dict[str, tuple[str, int]], cores: int) -> None:
        self.workers, self.cores = workers, cores

    def scheduler_info(self):
        return {"workers": {address: {"host": host, "nthreads": threads}
                            for address, (host, threads) in self.workers.items()}}

    def run(self, function):
        return {address: self.cores for address in self.workers}


def _load(workers: dict[str, tuple[str, int]], cores: int) -> dict:
    return host_cores.host_load(_Client(workers, cores))


def test_cpu_workers_sharing_cores_are_warned_of():
    two_on_two = _load({"tcp://a:1": ("a", 1), "tcp://a:2": ("a", 1)}, cores=2)
    assert two_on_two == {"a": (2, 2)}
    warning = host_cores.shared_cores_warning(two_on_two)
    assert warning.startswith("2 worker threads time CPU cases side by side on a, which has "
                              "2 physical core(s)")
    assert "--workers 1" in warning
    roomy = _load({"tcp://a:1": ("a", 1), "tcp://a:2": ("a", 1)}, cores=16)
    assert host_cores.shared_cores_warning(roomy) == ""
    one = _load({"tcp://a:1": ("a", 1)}, cores=2)  # one timing at a time: nothing shared
    assert host_cores.shared_cores_warning(one) == ""
    spread = _load({"tcp://a:1": ("a", 2), "tcp://b:1": ("b", 2)}, cores=2)
    assert "on a," in host_cores.shared_cores_warning(spread)


def test_only_a_sweep_timing_cpu_backends_is_warned_of():
    from sparsescope.sweep.sources import MatrixSource
    from sparsescope.sweep.tasks import plan_tasks

    src = MatrixSource(ref="x.mtx", name="x", kind="file")
    assert engine.timed_on_cpu({src: plan_tasks([src], ["scipy-cpu"], "spmv")})
    assert not engine.timed_on_cpu({src: plan_tasks([src], ["cupy-cusparse-i32"], "spmv")})


def test_a_worker_prefetches_only_with_a_core_to_spare_for_it():
    assert host_cores.room_to_prefetch(_load({"tcp://a:1": ("a", 1)}, cores=2))
    assert not host_cores.room_to_prefetch(_load({"tcp://a:1": ("a", 1),
                                                  "tcp://a:2": ("a", 1)}, cores=2))
    assert host_cores.room_to_prefetch(_load({"tcp://a:1": ("a", 1),
                                              "tcp://a:2": ("a", 1)}, cores=16))
    assert not host_cores.room_to_prefetch({})  # nothing known: nothing spared


def test_physical_cores_are_those_this_process_may_use():
    import os

    cores = host_cores.physical_cores()
    assert 1 <= cores <= len(os.sched_getaffinity(0))


@pytest.mark.slow
def test_a_local_cluster_sweep_records_the_warning_in_its_json(tmp_path, store, capsys,
                                                                monkeypatch):
    monkeypatch.setattr(host_cores, "shared_cores_warning",
                        lambda load: "2 worker threads time CPU cases side by side")
    code = main(_sweep_args(tmp_path, "--cluster", "local", "--workers", "2", "--json"))
    captured = capsys.readouterr()
    import json

    doc = json.loads(captured.out)
    assert code == 0 and doc["throughput"]["shared_cores"].startswith("2 worker threads")
    assert doc["throughput"]["cluster"] == "local"
    assert captured.err.count("sparsescope: warning: 2 worker threads time CPU cases") == 1
