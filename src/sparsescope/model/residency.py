"""Where a kernel's dependent loads find their data, and so how long each round trip takes.

The loop's round trips (``predict.iteration_ns``: the issue schedule's stops, the setup
rounds) wait for loads whose latency depends on where the data is when they are issued, not
on the device alone. Two cases change it from "every stream load comes from DRAM":

* **The timing mode** (``model.throughput``). Timed alone, the call follows the protocol's L2
  flush: a stream byte's first load comes from DRAM. Back to back, the previous call left in
  the L2 whatever of the call's data fits, so a stream load misses only for the share that did
  not fit, and so does an x gather::

      share     = max(0, fetched - L2) / fetched       (model.throughput.warm_dram_share)
      stream    = L2 latency + share x (DRAM latency - L2 latency)
      x misses  = (1 - h^s) x share                     (for the x round of iteration_ns)

  (latency mode: stream = DRAM latency, the x misses as the gather model counts them.)

* **A lane walking its own row** (the CSR kernels: ``KernelShape.row_windows``). One main-loop
  iteration of a row reads ``tpr x w`` consecutive entries of each stream (``tpr`` lanes a
  row, ``w`` entries a lane), ``tpr x w x e`` bytes for ``e``-byte entries. DRAM delivers
  ``A`` bytes an access (HBM3: 64 B; :func:`dram_access_bytes` of the spec's memory type),
  and the L2 keeps them. When ``tpr x w x e <= A`` an iteration opens at most one new access
  unit per stream, and the loads the warp issues before its first stop in the iteration
  already ask for it: every stream load issued after that stop reads what is on chip, at the
  L2 latency (``IssueSchedule.walk``'s ``reuse_ns``)::

      reuse = L2 latency    if row_windows and tpr x w x e_max <= A     (else none: DRAM)

  ``csr_scalar<float, int>`` (1 lane, 16 entries of 4 bytes: 64 B) qualifies on HBM3;
  ``csr_vector`` with 2 or more lanes a row (128 B and more an iteration), or 8-byte entries,
  does not.

Hand check (DRAM 336 ns, L2 145 ns, L2 60 MiB): throughput, 30 MB fetched -> share 0, stream
145 ns; 120 MiB fetched -> share 0.5, stream 240.5 ns; latency mode -> 336 ns.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparsescope.model.throughput import is_throughput, warm_dram_share

#: Memory type -> bytes one DRAM access delivers (a pseudo-channel's width x its burst
#: length), longest name first: what the L2 receives for a missed 32-byte sector.
DRAM_ACCESS_BYTES: tuple[tuple[str, int, str], ...] = (
    ("HBM3", 64, "JEDEC JESD238 (HBM3, also HBM3e): 64-bit pseudo-channel x burst length 8"),
    ("HBM2", 32, "JEDEC JESD235 (HBM2, HBM2e): 64-bit pseudo-channel x burst length 4"),
    ("GDDR6", 32, "JEDEC JESD250 (GDDR6, GDDR6X): 16-bit channel x burst length 16"),
)


def dram_access_bytes(memory: str) -> tuple[int, str]:
    """(bytes, source) of one DRAM access for a spec's ``memory`` (``141 GB HBM3e`` -> 64 B);
    32 B (one sector, no more assumed) for a memory type not in :data:`DRAM_ACCESS_BYTES`."""
    for kind, size, source in DRAM_ACCESS_BYTES:
        if kind.lower() in (memory or "").lower():
            return size, source
    return 32, "not known for this memory: one 32-byte sector"


@dataclass(frozen=True)
class LoadLatencies:
    """The latencies a kernel's dependent loads see (module docstring)."""

    stream_ns: float
    """A stream load's round trip (row pointers, columns, values): DRAM's after the flush, less
    where the L2 kept the data (throughput)."""
    x_miss_scale: float
    """Factor on the x gathers' L2 miss probability (1 timed alone; the DRAM share warm)."""
    reuse_ns: float | None
    """A stream load issued after the iteration's first stop, when that stop's loads opened
    every access unit of the iteration (a lane walking its row); None: ``stream_ns``."""
    source: str
    """The formula with its figures, for the prediction's assumptions."""


def lane_reuse(shape, entry_bytes: float, access_bytes: int) -> bool:
    """Whether one main-loop iteration of a row reads at most one DRAM access unit of each
    stream (module docstring): the kernel's lanes walk their rows (``row_windows``) and
    ``threads_per_row x nnz_per_iteration x entry_bytes <= access_bytes``. Hand check: 1 lane,
    16 entries of 4 bytes, 64-byte access -> True; 2 lanes -> False (128 B)."""
    if not shape.row_windows or entry_bytes <= 0:
        return False
    per_iteration = shape.threads_per_row * shape.nnz_per_iteration * entry_bytes
    return per_iteration <= access_bytes


def load_latencies(rates, shape, fetched_bytes: float, entry_bytes: float) -> LoadLatencies:
    """The :class:`LoadLatencies` of ``shape`` on the device and timing mode of ``rates`` (a
    ``DeviceRates``), for a call that brings ``fetched_bytes`` from DRAM when timed alone and
    streams entries of at most ``entry_bytes`` bytes."""
    dram = rates.dram_latency_ns
    l2 = min(rates.l2_latency_ns, dram) if rates.l2_latency_ns else dram
    if is_throughput(rates):
        share = warm_dram_share(fetched_bytes, rates.l2_bytes)
        stream = l2 + share * (dram - l2)
        how = (f"throughput: stream loads {l2:,.0f} + {share:.3f} x ({dram:,.0f} - {l2:,.0f}) ns "
               f"= {stream:,.0f} ns (what did not fit in the warm L2 from DRAM), x misses x "
               f"{share:.3f}")
    else:
        share, stream = 1.0, dram
        how = f"latency mode: stream loads from DRAM ({dram:,.0f} ns) after the L2 flush"
    access = int(getattr(rates, "dram_access_bytes", 32) or 32)
    reuse = None
    if lane_reuse(shape, entry_bytes, access) and l2 < stream:
        reuse = l2
        how += (f"; a lane's row: {shape.threads_per_row} x {shape.nnz_per_iteration} entries x "
                f"{entry_bytes:g} B <= {access} B a DRAM access, so stream loads after the "
                f"iteration's first stop read on-chip data ({l2:,.0f} ns)")
    return LoadLatencies(stream_ns=stream, x_miss_scale=share, reuse_ns=reuse, source=how)
