"""How a cluster's worker threads sit on its hosts' physical cores.

Two decisions of a sweep on a cluster depend on it:

* :func:`shared_cores_warning`: a CPU case is timed while the other workers of its host run
  theirs, sharing the cores, caches and memory bandwidth the timing measures (on the 2-core
  machine a 2-worker ``--cluster local`` sweep took 41.5 s where the same sweep in process took
  27.8 s). Per host, the worker threads that time cases plus one for the client, scheduler and
  nannies must fit the physical cores available: ``threads + 1 > cores`` warns (2
  single-thread workers on 2 cores: 3 > 2).
* :func:`room_to_prefetch`: loading a worker's next matrix in the background takes a core of
  its own: with fewer physical cores than twice the worker threads of a host it would take the
  core a case's own host-side work needs (its float64 reference, its check, the launches of a
  GPU). On the 2-core machine, 2 workers that prefetched ran 108 cases/min of stand-in GPU
  cases where the code before, which did not, ran 185 (``benchmarks/sweep_scaling.py``).
"""

from __future__ import annotations


def physical_cores() -> int:
    """Physical cores this process may run on: the CPUs of its affinity mask, less the
    hardware threads that share a core (``psutil``'s logical / physical ratio)."""
    import os

    try:
        available = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        available = os.cpu_count() or 1
    try:
        import psutil

        logical = psutil.cpu_count(logical=True) or available
        physical = psutil.cpu_count(logical=False) or logical
    except ImportError:
        logical = physical = available
    return max(1, available * physical // max(1, logical))


def host_load(client) -> dict[str, tuple[int, int | None]]:
    """Host -> (worker threads on it, its physical cores, None when its workers did not
    say) of the cluster behind ``client`` (empty when the scheduler does not answer)."""
    try:
        info = client.scheduler_info().get("workers", {})
        cores = client.run(physical_cores)
    except Exception:  # noqa: BLE001 (a scheduler gone: the sweep reports that itself)
        return {}
    load: dict[str, tuple[int, int | None]] = {}
    for address, worker in info.items():
        host = worker.get("host", address)
        threads, have = load.get(host, (0, None))
        if address in cores:
            have = int(cores[address])
        load[host] = (threads + int(worker.get("nthreads", 1)), have)
    return load


def shared_cores_warning(load: dict[str, tuple[int, int | None]]) -> str:
    """Why CPU timings on these hosts share cores (see the module docstring), or ""."""
    for host, (threads, cores) in sorted(load.items()):
        if cores is not None and threads > 1 and threads + 1 > cores:
            return (f"{threads} worker threads time CPU cases side by side on {host}, which "
                    f"has {cores} physical core(s) for them and the client: the CPU timings "
                    "share cores and memory bandwidth and read slower and noisier than one at "
                    "a time; for CPU timings run in process (no --cluster) or with --workers "
                    f"{max(1, cores - 1)}")
    return ""


def room_to_prefetch(load: dict[str, tuple[int, int | None]]) -> bool:
    """Every host has a physical core for each worker thread's cases and one more for its
    background load (``cores >= 2 x threads``); unknown hosts have none to spare."""
    return bool(load) and all(cores is not None and cores >= 2 * threads
                              for threads, cores in load.values())
