"""This process's peak resident memory, read from ``/proc`` (a sweep reports its own)."""

from __future__ import annotations


def reset_peak_rss() -> bool:
    """Start this process's peak-memory count afresh (Linux: ``5`` to ``/proc/self/
    clear_refs`` resets ``VmHWM``), so the sweep reports its own peak, not an earlier one."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def max_rss_mb() -> float:
    """This process's peak resident memory since :func:`reset_peak_rss`, MiB (``VmHWM``;
    where /proc is not there, ``ru_maxrss``: the peak since the process started)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
