"""What the operating system says about the host CPU: model name, cores, caches, RAM.

Every function reads the OS (Linux ``/proc`` and ``/sys``, ``lscpu``, :mod:`platform`) and falls
back to a stated default, so the pipeline runs on any host.

The last-level cache the OS reports is not always one a timer can flush: a virtual machine's
CPUID leaves are the hypervisor's, and some cloud VMs report their host socket's whole L3 (a
2-vCPU VM: 480 MiB, "503.3 MB"; a 16-vCPU one: 300 MiB). Flushing twice 480 MiB before every
timed call cost 10 s of a 22 s run and 1.3 GB of memory, and evicted the interpreter's own
state so that a 1 x 1 SpMV read 0.31 ms instead of 3 us. :func:`evictable_cache` is the cache
the timing protocol flushes: the reported one, unless it is a VM's and larger than any real
CPU gives the CPUs sharing it (:data:`MAX_LLC_PER_CPU_BYTES` each), in which case that bound.
"""

from __future__ import annotations

import functools
import os
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass
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


@dataclass(frozen=True)
class CacheLevel:
    """One data or unified cache of CPU 0, as sysfs describes it."""

    level: int
    """1, 2, 3 (4 on a few parts)."""
    kind: str
    """``Data`` or ``Unified`` (instruction caches are left out)."""
    size_bytes: int
    shared_cpus: int
    """Logical CPUs of this OS that share it (its ``shared_cpu_list``; 1 when not given)."""


def count_cpu_list(text: str) -> int:
    """CPUs in a kernel CPU list: ``"0-3,8"`` -> 5, ``"1"`` -> 1, ``""`` -> 0."""
    count = 0
    for part in text.strip().split(","):
        if not part.strip():
            continue
        low, _, high = part.partition("-")
        count += int(high) - int(low) + 1 if high else 1
    return count


def cache_levels(sys_cpu: Path = _SYS_CPU) -> tuple[CacheLevel, ...]:
    """CPU 0's data and unified caches from ``<sys_cpu>/cpu0/cache/index*``, lowest level
    first; an index whose files are missing or unreadable is left out."""
    found = []
    for index in sorted((sys_cpu / "cpu0" / "cache").glob("index*")):
        try:
            kind = (index / "type").read_text().strip()
            level = int((index / "level").read_text())
            size = parse_size((index / "size").read_text())
        except (OSError, ValueError):
            continue
        if kind == "Instruction" or not size:
            continue
        try:
            shared = count_cpu_list((index / "shared_cpu_list").read_text()) or 1
        except (OSError, ValueError):
            shared = 1
        found.append(CacheLevel(level, kind, size, shared))
    return tuple(sorted(found, key=lambda c: c.level))


def _llc_from_sysfs() -> int | None:
    levels = cache_levels()
    return levels[-1].size_bytes if levels else None


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
    return FALLBACK_LLC_BYTES, "estimate: 32 MB (the OS reports no cache sizes)"


def last_level_cache_bytes() -> int:
    """Size of the last-level cache in bytes (see :func:`last_level_cache`)."""
    return last_level_cache()[0]


MAX_LLC_PER_CPU_BYTES = 16 * 1024 * 1024
"""The most last-level cache a real CPU gives each logical CPU sharing it, with margin: AMD's
3D V-Cache parts have 12 MiB a core (96 MiB over an 8-core CCD), Xeons 1.875-5 MiB a core
(Emerald Rapids: 320 MB over 64 cores), every other part less. A hypervisor's report above
it is its host's cache, not one this VM's CPUs hold; on bare metal the report is trusted (a
low-core-count part can exceed it, and there the kernel reads the cache of the die itself)."""


def under_hypervisor(cpuinfo_path: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether the CPU flags include ``hypervisor`` (set by every x86 hypervisor that says it
    is one: KVM, Xen, Hyper-V, VMware); False when the file cannot be read."""
    try:
        for line in cpuinfo_path.read_text().splitlines():
            if line.lower().startswith("flags"):
                return "hypervisor" in line.split(":", 1)[-1].split()
    except OSError:
        pass
    return False


@dataclass(frozen=True)
class EvictableCache:
    """The cache the host timing protocol flushes between repeats: the last-level cache as
    the OS reports it, bounded where a VM reports its host's."""

    size_bytes: int
    """What a single-threaded timer must evict (the flush streams twice this)."""
    reported_bytes: int
    """The last-level cache as the OS reports it."""
    level: int
    """Its level (3 for an L3); 0 when the OS names none (lscpu without levels, fallback)."""
    shared_cpus: int
    """Logical CPUs of this OS sharing it."""
    virtual: bool
    """Whether the OS runs under a hypervisor (the report is then the hypervisor's)."""
    bounded: bool
    """True when ``size_bytes`` is the bound, not the report."""
    source: str
    """Where the report came from."""

    @property
    def name(self) -> str:
        """The cache as the machine names it: ``LLC (L3)``, ``LLC (L3, as the VM reports
        it)``; ``LLC`` when no level is known."""
        parts = [f"L{self.level}"] if self.level else []
        if self.virtual:
            parts.append("as the VM reports it")
        return "LLC" + (f" ({', '.join(parts)})" if parts else "")

    @property
    def reading(self) -> str:
        """One sentence, led by its source: what was reported and what the timer flushes
        (``os: /sys/devices/system/cpu/cpu0/cache: LLC (L3, as the VM reports it), 480.0 MiB
        shared by 2 CPUs; more than 16 MiB a CPU ...``)."""
        mib = 1024 * 1024
        shared = f"shared by {self.shared_cpus} CPU{'s' if self.shared_cpus != 1 else ''}"
        text = f"{self.source}: {self.name}, {self.reported_bytes / mib:,.1f} MiB {shared}"
        if self.bounded:
            return (f"{text}; more than {MAX_LLC_PER_CPU_BYTES // mib} MiB a CPU is the "
                    f"host's cache, so the timer flushes as if it held "
                    f"{self.size_bytes / mib:,.0f} MiB ({self.shared_cpus} x "
                    f"{MAX_LLC_PER_CPU_BYTES // mib} MiB)")
        return f"{text}; the timer flushes against all of it"


def choose_evictable(levels: tuple[CacheLevel, ...], virtual: bool, *,
                     fallback: tuple[int, str] | None = None,
                     cores: int = 1) -> EvictableCache:
    """The cache a single-threaded timer flushes, from the OS's cache ``levels``::

        per_cpu = LLC / shared_cpus
        size    = shared_cpus x MAX_LLC_PER_CPU   when virtual and per_cpu > MAX_LLC_PER_CPU
                  (never below the level under it, a cache the CPU surely has)
                = LLC                             otherwise

    Hand check: a 2-vCPU VM reporting a 480 MiB L3 shared by both -> 240 MiB a CPU -> bounded
    to 2 x 16 = 32 MiB; this repository's 2-vCPU VM (a 32 MiB L3 shared by 2: 16 MiB a CPU)
    -> 32 MiB as reported. Without sysfs levels, ``fallback`` (bytes, source: lscpu or the
    32 MB default) counts as shared by ``cores``.
    """
    if levels:
        llc = levels[-1]
        size, level, shared = llc.size_bytes, llc.level, llc.shared_cpus
        below = levels[-2].size_bytes if len(levels) > 1 else 0
        source = "os: /sys/devices/system/cpu/cpu0/cache"
    else:
        size, source = fallback or (FALLBACK_LLC_BYTES, "estimate: 32 MB")
        level, shared, below = 0, max(1, cores), 0
    bound = shared * MAX_LLC_PER_CPU_BYTES
    if virtual and size > bound:
        return EvictableCache(max(bound, below), size, level, shared, virtual, True, source)
    return EvictableCache(size, size, level, shared, virtual, False, source)


@functools.lru_cache(maxsize=1)
def evictable_cache() -> EvictableCache:
    """This machine's :class:`EvictableCache` (:func:`choose_evictable` on sysfs, else on
    lscpu's or the fallback last-level cache), read once per process."""
    levels = cache_levels()
    fallback = None if levels else last_level_cache()
    return choose_evictable(levels, under_hypervisor(), fallback=fallback,
                            cores=logical_cores())


def evictable_cache_bytes() -> int:
    """Bytes of :func:`evictable_cache`: what the host timer flushes against."""
    return evictable_cache().size_bytes


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


@dataclass(frozen=True)
class CpuTimes:
    """Where the machine's CPU time went up to one moment (``/proc/stat``'s ``cpu`` line, in
    seconds over all CPUs) and this process's own share of it (:func:`os.times`)."""

    busy_s: float
    """user + nice + system + irq + softirq: time any process (or the kernel) ran."""
    steal_s: float
    """Time the hypervisor gave this VM's CPUs to someone else."""
    cpus: int
    """CPUs the ``cpu`` line sums over (its ``cpuN`` lines: all the kernel's CPUs, not only
    this process's affinity)."""
    own_s: float
    """This process's user + system time, every thread counted."""
    wall_s: float
    """:func:`time.monotonic` when read."""


def _proc_stat_seconds(stat_path: Path) -> tuple[float, float, int] | None:
    """(busy, steal) seconds from ``/proc/stat``'s first line and the CPUs it sums; None when
    unreadable."""
    try:
        lines = stat_path.read_text().splitlines()
        first = lines[0].split()
        ticks = [int(v) for v in first[1:]]
    except (OSError, IndexError, ValueError):
        return None
    if first[0] != "cpu" or len(ticks) < 7:
        return None
    cpus = sum(1 for line in lines[1:] if re.match(r"cpu\d+\s", line)) or 1
    hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    user, nice, system, _idle, _iowait, irq, softirq = ticks[:7]
    steal = ticks[7] if len(ticks) > 7 else 0
    return (user + nice + system + irq + softirq) / hz, steal / hz, cpus


def cpu_times(stat_path: Path = Path("/proc/stat")) -> CpuTimes | None:
    """This moment's :class:`CpuTimes`; None where the OS has no ``/proc/stat``."""
    import time

    machine = _proc_stat_seconds(stat_path)
    if machine is None:
        return None
    own = os.times()
    return CpuTimes(*machine, own.user + own.system, time.monotonic())


@dataclass(frozen=True)
class OtherActivity:
    """What other processes (and the hypervisor) took of the machine between two
    :class:`CpuTimes`: the real signal that a measurement shared the machine."""

    others_pct: float
    """``100 (busy delta - own delta) / (wall x cpus)``: other processes' share of every CPU's
    time (0 on an idle machine; 50 when another process held one of two CPUs throughout)."""
    steal_pct: float
    """``100 steal delta / (wall x cpus)``: the hypervisor's share."""
    wall_s: float
    cpus: int


def other_activity(before: CpuTimes, after: CpuTimes) -> OtherActivity:
    """:class:`OtherActivity` between ``before`` and ``after``. Hand check: 2 CPUs over 1 s,
    1.5 s busy of which 0.9 s ours, 0.1 s stolen -> others 100 x 0.6 / 2 = 30 %, steal 5 %.
    Shares are clipped at 0 (the kernel's tick accounting and ours can disagree by a tick)."""
    wall = max(after.wall_s - before.wall_s, 1e-9)
    cpus = max(after.cpus, 1)
    capacity = wall * cpus
    others = (after.busy_s - before.busy_s) - (after.own_s - before.own_s)
    steal = after.steal_s - before.steal_s
    return OtherActivity(max(0.0, 100 * others / capacity), max(0.0, 100 * steal / capacity),
                         wall, cpus)
