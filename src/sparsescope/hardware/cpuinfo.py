"""What the operating system says about the host CPU: model name, cores, last-level cache, RAM.

Every function reads the OS (Linux ``/proc`` and ``/sys``, ``lscpu``, :mod:`platform`) and falls
back to a stated default, so the pipeline runs on any host.
"""

from __future__ import annotations

import functools
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

#: Last-level cache assumed when neither sysfs nor lscpu reports one (a large server LLC).
FALLBACK_LLC_BYTES = 32 * 1024 * 1024

_SYS_CPU = Path("/sys/devices/system/cpu")
_UNITS = {"": 1, "B": 1, "K": 1024, "KB": 1024, "KIB": 1024, "M": 1024**2, "MB": 1024**2,
          "MIB": 1024**2, "G": 1024**3, "GB": 1024**3, "GIB": 1024**3}


def parse_size(text: str) -> int | None:
    """Bytes in a cache-size string: ``"2048K"``, ``"260 MiB"``, ``"32 MB (1 instance)"``."""
    match = re.match(r"\s*([\d.]+)\s*([KMG]?I?B?)\b", text.strip(), re.IGNORECASE)
    if not match:
        return None
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


def cpu_model_name() -> str:
    """``model name`` from /proc/cpuinfo, else :func:`platform.processor`, else the machine."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def logical_cores() -> int:
    """Logical CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _llc_from_sysfs() -> int | None:
    best_level, best_size = -1, None
    for index in sorted(_SYS_CPU.glob("cpu0/cache/index*")):
        try:
            if (index / "type").read_text().strip() == "Instruction":
                continue
            level = int((index / "level").read_text())
            size = parse_size((index / "size").read_text())
        except (OSError, ValueError):
            continue
        if size and level > best_level:
            best_level, best_size = level, size
    return best_size


def _llc_from_lscpu() -> int | None:
    if shutil.which("lscpu") is None:
        return None
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    sizes = {}
    for line in out.splitlines():
        match = re.match(r"\s*L(\d)\w*\s+cache:\s*(.+)", line)
        if match:
            sizes[int(match.group(1))] = parse_size(match.group(2))
    return sizes[max(sizes)] if sizes else None


@functools.lru_cache(maxsize=1)
def last_level_cache() -> tuple[int, str]:
    """(bytes, source) of the last-level cache: sysfs, then lscpu, then 32 MB."""
    size = _llc_from_sysfs()
    if size:
        return size, "os: /sys/devices/system/cpu/cpu0/cache"
    size = _llc_from_lscpu()
    if size:
        return size, "os: lscpu"
    return FALLBACK_LLC_BYTES, "fallback: 32 MB (the OS reports no cache sizes)"


def last_level_cache_bytes() -> int:
    """Size of the last-level cache in bytes (see :func:`last_level_cache`)."""
    return last_level_cache()[0]


def cpu_max_mhz() -> tuple[float, str]:
    """(MHz, source): cpufreq maximum, else /proc/cpuinfo's current ``cpu MHz``, else 0."""
    try:
        khz = int((_SYS_CPU / "cpu0/cpufreq/cpuinfo_max_freq").read_text())
        return khz / 1000.0, "os: cpufreq cpuinfo_max_freq"
    except (OSError, ValueError):
        pass
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("cpu mhz"):
                return float(line.split(":", 1)[1]), "os: /proc/cpuinfo cpu MHz (current)"
    except (OSError, ValueError):
        pass
    return 0.0, "unknown: the OS reports no clock"


def total_ram_bytes() -> int:
    """Physical memory, bytes (0 when unknown)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return 0


def available_ram_bytes() -> int:
    """``MemAvailable`` from /proc/meminfo, else total RAM."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return total_ram_bytes()
