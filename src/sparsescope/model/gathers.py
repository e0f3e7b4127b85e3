"""How fast can x be gathered? A memory floor of one SpMV format from its L2 sector requests.

A CSR SpMV gathers ``x[col]`` once per nonzero. A gather served on chip (shared memory) costs no
L2 request; the others cost one 32-byte L2 sector request per distinct sector of a warp
instruction. Whatever the kernel, an SM can pin at most its shared memory's worth of x
(``capacity`` entries), and the best it can do is pin the most-gathered columns (all SMs the same
ones), or hold every x sector of a run of consecutive nonzeros and fetch each once. Pinned
columns are not free: every SM fills its copy from L2 once a call, a 32-byte sector at a time
(``fill sectors`` = SMs x distinct sectors of the pinned columns), so an SM pins only the
most-gathered columns whose gathers outweigh their fill (``hot_set.pinned_columns``; on a
matrix with no hot columns, none). ``x_requests`` is the fewest requests, fill included, of
three such strategies, counted by the x-gather model (``xgather.floor_requests``): the pinned
columns on chip with a warp instruction of 32 consecutive nonzeros or of 32 rows (a thread
each), or runs of capacity / 32 B nonzeros (at most that many distinct sectors, so they fit)
each fetching its sectors once. Then::

    l2 floor    = (stream bytes + 32 x fill sectors) / L2 bandwidth
                  + x_requests / L2 random-gather sector rate
    dram floor  = (stream bytes + x bytes once + measured flush write-back) / DRAM bandwidth
    chain       = DRAM latency + L2 latency
    floor       = one launch + chain + max(l2 floor, dram floor)

The fill is charged at the L2's streaming bandwidth, the cheapest way its sectors could come (a
floor must hold). Only one SM's own shared memory is credited: loads spread over a thread-block
cluster's shared memory ran at 0.4-1.05x the L2 random-gather rate on the H200, against 7.4x
for a block's own (results/h200/kernels/followups/2026-11-25-dsmem-gather-probe), so pinning a
larger hot set across a cluster would not gather faster than the L2 does.

One launch: the measured empty kernel, which every timed call pays at least once. The chain: the
bytes arrive through a pipe of the DRAM's latency, so the last stream byte comes no earlier than
one latency after the bandwidth time, and the x entry it names is gathered after it (at least
an L2 round trip); both latencies are the measured pointer chases. The flush write-back: the
dirty lines the timing protocol's L2 flush leaves, which the kernel evicts, counted only at the
share the device's own ``flush_writeback_share`` ceiling measured (``predict.flush_writeback``)
and not at all without it: a whole L2 of it is too much (pwtk's blocked kernel on the H200 ran
23 % under a floor that counted it all, results/h200/kernels/2026-11-25-selection at 7e3e7ad),
and a floor must hold.

Why the random-gather rate and not the L2 bandwidth / 32 B: scattered 32-byte requests are
served at the rate the device's own ``random_gather`` ceiling measures (every load its own
sector), which on an H200 is 152 G sectors/s against the 249 G sectors/s that the streaming L2
bandwidth would give; a floor at the streaming rate is one no gather kernel can reach (ncu put
our circuit5M kernel at 1.34 L2 sectors per nonzero with the L2 at 88 % of its peak,
results/h200/kernels/2026-11-22-benchmark). Without a measured gather rate the x requests are
charged 32 B at the L2 bandwidth (the older, lower floor), and the floor says so.

The floor is the format's, not the kernel's: it holds for any kernel that reads this format's
streams and uses its on-chip memory as one of the three strategies; a kernel that beats it has
found reuse the floor does not credit (a model defect worth reading), never a gap.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SECTOR_BYTES = 32


def sector_index(cols: np.ndarray, value_bytes: int,
                 sector_bytes: int = SECTOR_BYTES) -> np.ndarray:
    """The 32-byte sector of each x entry: ``cols * value_bytes // sector_bytes`` (a shift when
    that is one)."""
    per = sector_bytes // value_bytes
    if per * value_bytes == sector_bytes and per & (per - 1) == 0:
        return cols >> (per.bit_length() - 1)
    return cols.astype(np.int64) * value_bytes // sector_bytes


def top_columns(column_counts: np.ndarray, capacity: int) -> tuple[np.ndarray, int]:
    """(mask, gathers) of the ``capacity`` most-gathered columns: a boolean mask over the
    columns and the sum of their counts. Columns tied at the smallest count kept are taken
    lowest index first. O(columns + largest count): the ``capacity``-th largest count ``t``
    comes from a histogram of the counts (``np.partition`` slows down many times over on the
    many equal counts of a sparse matrix's columns)::

        t = max v such that #(counts >= v) >= capacity
        mask = (counts > t) plus the first (capacity - #(counts > t)) columns with count t
    """
    counts = np.asarray(column_counts, dtype=np.int64)
    capacity = max(0, min(int(capacity), counts.size))
    if capacity == 0:
        return np.zeros(counts.size, dtype=bool), 0
    at_least = np.cumsum(np.bincount(counts)[::-1])[::-1]  # at_least[v] = #(counts >= v)
    t = int(np.flatnonzero(at_least >= capacity)[-1])
    mask = counts > t
    tied = np.flatnonzero(counts == t)[:capacity - int(mask.sum())]
    mask[tied] = True
    return mask, int(counts[mask].sum())


@dataclass(frozen=True)
class GatherFloor:
    """The memory floor of one SpMV format on one device (module docstring)."""

    capacity_entries: int
    """x entries one SM can pin on chip (its shared memory / value bytes)."""
    hot_share: float
    """Share of the gathers that the pinned columns serve."""
    x_requests: float
    """Fewest L2 sector requests of x over the floor's strategies."""
    fill_sectors: float
    """SMs x distinct sectors of the pinned columns, filled from L2 once a call."""
    strategy: str
    """The strategy that gave ``x_requests``."""
    l2_ms: float
    """(stream bytes + 32 x fill sectors) / L2 bandwidth + x_requests / gather rate."""
    dram_ms: float
    """(stream bytes + x bytes + flush write-back) / DRAM bandwidth."""
    launch_ms: float
    """One kernel launch (measured), or 0 when not known."""
    chain_ms: float
    """DRAM latency + L2 latency (measured), or 0 when not known."""
    formula: str
    """Both floors with this case's numbers, for the report."""

    @property
    def floor_ms(self) -> float:
        """launch_ms + chain_ms + max(l2_ms, dram_ms)."""
        return self.launch_ms + self.chain_ms + max(self.l2_ms, self.dram_ms)

    @property
    def binding(self) -> str:
        """``l2`` or ``dram``: the floor that binds."""
        return "l2" if self.l2_ms >= self.dram_ms else "dram"


def gather_floor(stream_bytes: float, x_bytes: float, x_requests: float, *, hot: float,
                 capacity_entries: int, strategy: str, dram_bw_gb_s: float,
                 l2_bw_gb_s: float, gather_gsectors_s: float | None,
                 writeback_bytes: float = 0.0, launch_ms: float = 0.0,
                 chain_ms: float = 0.0, fill_sectors: float = 0.0) -> GatherFloor:
    """The floor of a format that streams ``stream_bytes`` (values, indices, row metadata, y)
    and gathers x with ``x_requests`` L2 sector requests (module docstring). Hand check:
    1 MB of streams at 5,000 GB/s L2 = 0.2 us, 1 M requests at 100 G sectors/s = 10 us:
    l2 floor 10.2 us; DRAM (1 MB + 0.5 MB) at 3,000 GB/s = 0.5 us; floor 10.2 us (l2), plus
    the launch and the latency chain when given. 62,500 fill sectors add 2 MB at 5,000 GB/s:
    0.4 us more."""
    if dram_bw_gb_s <= 0 or l2_bw_gb_s <= 0:
        raise ValueError("bandwidths must be positive")
    fill_bytes = fill_sectors * SECTOR_BYTES
    stream_ms = (stream_bytes + fill_bytes) / (l2_bw_gb_s * 1e6)
    if gather_gsectors_s:
        x_ms = x_requests / (gather_gsectors_s * 1e6)
        rate = f"{gather_gsectors_s:,.1f} G sectors/s (measured random gathers)"
    else:
        x_ms = x_requests * SECTOR_BYTES / (l2_bw_gb_s * 1e6)
        rate = f"32 B at {l2_bw_gb_s:,.0f} GB/s (no measured gather rate)"
    dram_bytes = stream_bytes + x_bytes + writeback_bytes
    dram_ms = dram_bytes / (dram_bw_gb_s * 1e6)
    pinned = (f", the pinned columns serving {100 * hot:.1f} % of gathers and filled with "
              f"{fill_sectors:,.0f} sectors" if hot else "")
    fill = f" + {fill_bytes:,.0f} B fill" if fill_bytes else ""
    formula = (f"L2: ({stream_bytes:,.0f} B streams{fill}) / {l2_bw_gb_s:,.0f} GB/s + "
               f"{x_requests:,.0f} x sector requests ({strategy}; {capacity_entries:,} x "
               f"entries on chip per SM{pinned}) / {rate}; "
               f"DRAM: {dram_bytes:,.0f} B (flush write-back {writeback_bytes:,.0f} B) / "
               f"{dram_bw_gb_s:,.0f} GB/s; plus one launch "
               f"({launch_ms * 1e3:.1f} us) and the DRAM + L2 latency chain "
               f"({chain_ms * 1e3:.2f} us)")
    return GatherFloor(capacity_entries=int(capacity_entries), hot_share=float(hot),
                       x_requests=float(x_requests), fill_sectors=float(fill_sectors),
                       strategy=strategy,
                       l2_ms=stream_ms + x_ms, dram_ms=dram_ms, launch_ms=float(launch_ms),
                       chain_ms=float(chain_ms),
                       formula=formula)


def l2_sector_rate(l2_bw_gb_s: float) -> float:
    """Sectors per second of a measured L2 bandwidth: ``GB/s * 1e9 / 32``."""
    return l2_bw_gb_s * 1e9 / SECTOR_BYTES
