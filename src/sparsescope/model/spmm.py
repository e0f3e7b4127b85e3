"""CSR SpMM ``Y = A @ X`` byte and flop model: A streamed once, X gathered, Y written.

X is dense ``cols x k``, row-major (``X[j, :]`` contiguous) or column-major (``X[:, c]``
contiguous); Y is dense ``rows x k``. Seed 004 (cuSPARSE against Ginkgo SpMM on three DLMC
matrices) draws where these kernels sit on the instruction roofline; this module gives the byte
side of the same kernels, from first principles, so the report can say how far a time is from
the floor and how the arithmetic intensity grows with k.

Two byte counts, both exact functions of (rows, cols, nnz, k, layout, widths):

* **compulsory** (the DRAM floor): every array once -- A's values, column indices and row
  pointers, X read once (perfect reuse), Y written once. ``k = 1`` is exactly the SpMV model of
  seed 000 section 2.5 (``model.spmv.spmv_traffic`` with y written only).
* **gather** (what the SMs request when nothing of X is reused in L1): A once, Y once, and for
  every nonzero ``A[i, j]`` the 32-byte sectors holding the k values of X's row j -- the traffic
  the L2 (and the instruction roofline's L2 point) sees when X is served from L2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sparsescope.model.spmv import GB

SECTOR_BYTES = 32
"""L1/L2 sector: the unit a global access is served in (seed 004 normalises all traffic to it)."""
LAYOUTS = ("row", "col")


def x_sectors_per_nonzero(k: int, value_bytes: int = 4, layout: str = "row") -> float:
    """Mean 32-byte sectors one nonzero ``A[i, j]`` reads from X (all k values of row j).

    Row-major X: row j is ``L = k * value_bytes`` contiguous bytes starting at byte ``j * L``.
    Over all j the starts fall on multiples of ``g = gcd(L, 32)``, equally often, and an
    interval of L bytes starting at a multiple of g covers on average::

        sectors_row = (L + 32 - g) / 32

    (k = 1, float32: (4 + 28) / 32 = 1; k = 3: (12 + 28) / 32 = 1.25 -- starts at 0, 12, 24, 4,
    16, 28, 8, 20 need 1, 1, 2, 1, 1, 2, 1, 1 sectors; k = 8: exactly 1; k = 64: exactly 8).

    Column-major X: the k values of row j lie in k different columns, ``cols * value_bytes``
    apart, so each needs its own sector::

        sectors_col = k

    (the sector is shared only with nonzeros of nearby columns j' with the same j // 8, which a
    row of a pruned DNN matrix rarely holds; the model counts the isolated case).
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    if layout == "col":
        return float(k)
    length = k * value_bytes
    g = math.gcd(length, SECTOR_BYTES)
    return (length + SECTOR_BYTES - g) / SECTOR_BYTES


@dataclass(frozen=True)
class SpmmTraffic:
    """Bytes and flops of one CSR SpMM ``Y = A X`` (A rows x cols, X cols x k)."""

    rows: int
    cols: int
    nnz: int
    k: int
    """Columns of X and Y."""
    layout: str
    """``row`` (X row-major) or ``col`` (X column-major)."""
    value_bytes: int
    """Bytes per value of A, X and Y (4 for float32)."""
    index_bytes: int
    """Bytes per column index and row pointer (4 INT32, 8 INT64)."""
    a_bytes: int
    """nnz x (value_bytes + index_bytes) + (rows + 1) x index_bytes: A streamed once."""
    x_bytes: int
    """cols x k x value_bytes: X read once (perfect reuse)."""
    y_bytes: int
    """rows x k x value_bytes: Y written once."""
    x_sectors_per_nnz: float
    """Mean 32-byte sectors one nonzero gathers from X (:func:`x_sectors_per_nonzero`)."""

    @property
    def compulsory_bytes(self) -> int:
        """a_bytes + x_bytes + y_bytes: the DRAM floor's bytes."""
        return self.a_bytes + self.x_bytes + self.y_bytes

    @property
    def x_gather_bytes(self) -> float:
        """nnz x sectors per nonzero x 32: X as the gathers request it, no L1 reuse."""
        return self.nnz * self.x_sectors_per_nnz * SECTOR_BYTES

    @property
    def gather_bytes(self) -> float:
        """a_bytes + x_gather_bytes + y_bytes: the L2 traffic without L1 reuse of X."""
        return self.a_bytes + self.x_gather_bytes + self.y_bytes

    @property
    def x_useful_fraction(self) -> float:
        """k x value_bytes / (sectors per nonzero x 32): share of each gathered sector used."""
        return self.k * self.value_bytes / (self.x_sectors_per_nnz * SECTOR_BYTES)

    @property
    def flops(self) -> int:
        """2 x nnz x k: a multiply and an add per nonzero per column of X."""
        return 2 * self.nnz * self.k

    @property
    def arithmetic_intensity(self) -> float:
        """flops / compulsory_bytes (FLOP/byte): grows with k while X and Y stay small next to A."""
        return self.flops / self.compulsory_bytes

    @property
    def gather_intensity(self) -> float:
        """flops / gather_bytes (FLOP/byte): the intensity against L2 without X reuse in L1."""
        return self.flops / self.gather_bytes


def spmm_traffic(rows: int, cols: int, nnz: int, k: int, *, layout: str = "row",
                 value_bytes: int = 4, index_bytes: int = 4) -> SpmmTraffic:
    """Byte and flop model of CSR SpMM::

        A        = nnz * (value_bytes + index_bytes) + (rows + 1) * index_bytes
        X once   = cols * k * value_bytes
        Y        = rows * k * value_bytes
        compulsory bytes = A + X once + Y
        gather bytes     = A + nnz * sectors_per_nnz(k, layout) * 32 + Y
        flops            = 2 * nnz * k

    Hand check (dlmc3 ``dlmc-512x1024``: 512 x 1024, 157,286 nnz, float32, INT32, k = 64,
    row-major): A = 1,258,288 + 2,052 = 1,260,340 B, X = 262,144 B, Y = 131,072 B, compulsory
    1,653,556 B, flops 20,132,608, AI 12.18 FLOP/B; 8 sectors per nonzero, gather bytes
    41,656,628, gather AI 0.483 FLOP/B.
    """
    if min(rows, cols, nnz) < 0:
        raise ValueError(f"rows, cols and nnz must be >= 0, got {rows}, {cols}, {nnz}")
    if index_bytes not in (4, 8) or value_bytes not in (2, 4, 8):
        raise ValueError(f"index_bytes must be 4 or 8 and value_bytes 2, 4 or 8, got "
                         f"{index_bytes}, {value_bytes}")
    sectors = x_sectors_per_nonzero(k, value_bytes, layout)
    return SpmmTraffic(
        rows=rows, cols=cols, nnz=nnz, k=k, layout=layout, value_bytes=value_bytes,
        index_bytes=index_bytes,
        a_bytes=nnz * (value_bytes + index_bytes) + (rows + 1) * index_bytes,
        x_bytes=cols * k * value_bytes, y_bytes=rows * k * value_bytes,
        x_sectors_per_nnz=sectors)


def spmm_bound_ms(traffic: SpmmTraffic, bw_gb_s: float, fp32_peak_gflops: float) -> float:
    """Roofline bound of one SpMM: ``max(compulsory bytes / bw, flops / peak)``, in ms.

    The time no kernel can beat at that bandwidth and FP32 peak (Williams et al. 2009): below
    the ridge (AI < peak / bw) the bytes decide, above it the flops.
    """
    if bw_gb_s <= 0 or fp32_peak_gflops <= 0:
        raise ValueError("bw_gb_s and fp32_peak_gflops must be > 0")
    memory_ms = traffic.compulsory_bytes / (bw_gb_s * GB) * 1e3
    compute_ms = traffic.flops / (fp32_peak_gflops * GB) * 1e3
    return max(memory_ms, compute_ms)


def l2_gather_bound_ms(traffic: SpmmTraffic, l2_bw_gb_s: float) -> float:
    """``gather bytes / L2 bandwidth`` in ms: the bound when every gather of X is served by L2."""
    if l2_bw_gb_s <= 0:
        raise ValueError("l2_bw_gb_s must be > 0")
    return traffic.gather_bytes / (l2_bw_gb_s * GB) * 1e3


@dataclass(frozen=True)
class MemoryBound:
    """The better (tighter) of the DRAM and L2 bounds of one SpMM for the traffic model's
    bytes (issue 18's yardstick): a kernel reaching ``bound_ms / time`` of it is that close to
    what the memory system allows for those bytes."""

    dram_ms: float
    """compulsory bytes (A once, X once, Y once) / DRAM bandwidth."""
    l2_ms: float | None
    """gather bytes (A once, X's sectors per nonzero, Y once) / L2 bandwidth; None without an
    L2 bandwidth."""
    strategy: str = "direct"
    """``direct``: X gathered in its own layout; ``transposed``: column-major X and Y
    re-laid row-major around a row-major SpMM (cheaper for column-major X but at small k)."""

    @property
    def bound_ms(self) -> float:
        """max(dram_ms, l2_ms): no kernel moving the model's bytes beats either."""
        return max(self.dram_ms, self.l2_ms or 0.0)

    @property
    def binding(self) -> str:
        """``dram`` or ``l2``: the bound that is larger."""
        return "l2" if self.l2_ms is not None and self.l2_ms > self.dram_ms else "dram"

    def pct_of(self, time_ms: float) -> float:
        """100 x bound_ms / time_ms: the share of the bound a measured time reaches."""
        return 100.0 * self.bound_ms / time_ms


NOT_A_FLOOR = (
    "There the bound is not a floor. It charges every nonzero's X sectors to the L2 at the "
    "run's measured L2 bandwidth, while X rows gathered again soon are served by L1, and whole "
    "X rows may stream faster than that ceiling's access pattern. `model.spmm.memory_bound` has "
    "no L1 term yet.")
"""Why a case can run faster than :func:`memory_bound`: what the report and the population
summary say under such cases."""


def memory_bound(traffic: SpmmTraffic, dram_bw_gb_s: float,
                 l2_bw_gb_s: float | None) -> MemoryBound:
    """The DRAM and L2 bounds of :class:`MemoryBound`::

        dram = (A + X once + Y) / DRAM bandwidth
        l2   = (A + nnz x sectors_per_nnz x 32 + Y) / L2 bandwidth

    X gathered from L2 without reuse in L1 is the traffic a kernel that stages no X on chip
    asks of the L2 (a kernel reusing X rows in shared memory can go below it: then its
    ``pct_of`` exceeds 100 and says so). Column-major X can also be transposed: X and Y each
    read and written once more, and X gathered row-major::

        transposed: dram = (A + 3 X + 3 Y) / DRAM,  l2 = (A + nnz x sectors_row x 32 + 2 X
                    + 3 Y) / L2

    and the bound is the smaller of the two strategies' (either is open to a kernel). Hand
    check (the :func:`spmm_traffic` example, k = 64: compulsory 1,653,556 B, gather
    41,656,628 B) at 4,000 GB/s and 8,000 GB/s: dram 0.4134 us, l2 5.207 us, bound 5.207 us
    (L2-bound); a 10.414 us kernel reaches 50 % of it.
    """
    if dram_bw_gb_s <= 0 or (l2_bw_gb_s is not None and l2_bw_gb_s <= 0):
        raise ValueError("bandwidths must be > 0")
    direct = _memory_bound(traffic, dram_bw_gb_s, l2_bw_gb_s)
    if traffic.layout != "col":
        return direct
    row = spmm_traffic(traffic.rows, traffic.cols, traffic.nnz, traffic.k, layout="row",
                       value_bytes=traffic.value_bytes, index_bytes=traffic.index_bytes)
    around = 2 * (traffic.x_bytes + traffic.y_bytes)
    transposed = _memory_bound(row, dram_bw_gb_s, l2_bw_gb_s, extra_bytes=around,
                               strategy="transposed")
    return min(direct, transposed, key=lambda b: b.bound_ms)


def _memory_bound(traffic: SpmmTraffic, dram_bw_gb_s: float, l2_bw_gb_s: float | None, *,
                  extra_bytes: float = 0.0, strategy: str = "direct") -> MemoryBound:
    dram = (traffic.compulsory_bytes + extra_bytes) / (dram_bw_gb_s * GB) * 1e3
    l2 = ((traffic.gather_bytes + extra_bytes) / (l2_bw_gb_s * GB) * 1e3 if l2_bw_gb_s
          else None)
    return MemoryBound(dram, l2, strategy)


@dataclass(frozen=True)
class IntensityRow:
    """One k of the "arithmetic intensity against k" table of a matrix."""

    k: int
    compulsory_bytes: int
    gather_bytes: float
    flops: int
    arithmetic_intensity: float
    """flops / compulsory bytes, FLOP/byte."""
    gather_intensity: float
    """flops / gather bytes, FLOP/byte."""
    x_sectors_per_nnz: float
    bound_ms: float
    """max(compulsory / bw, flops / peak)."""
    memory_bound: bool
    """AI below the ridge point peak / bw."""


def intensity_table(rows: int, cols: int, nnz: int, ks: tuple[int, ...], *, layout: str = "row",
                    value_bytes: int = 4, index_bytes: int = 4, bw_gb_s: float,
                    fp32_peak_gflops: float) -> list[IntensityRow]:
    """The AI-against-k table: :func:`spmm_traffic` and :func:`spmm_bound_ms` for each k."""
    ridge = fp32_peak_gflops / bw_gb_s
    table = []
    for k in ks:
        t = spmm_traffic(rows, cols, nnz, k, layout=layout, value_bytes=value_bytes,
                         index_bytes=index_bytes)
        table.append(IntensityRow(
            k=k, compulsory_bytes=t.compulsory_bytes, gather_bytes=t.gather_bytes,
            flops=t.flops, arithmetic_intensity=t.arithmetic_intensity,
            gather_intensity=t.gather_intensity, x_sectors_per_nnz=t.x_sectors_per_nnz,
            bound_ms=spmm_bound_ms(t, bw_gb_s, fp32_peak_gflops),
            memory_bound=t.arithmetic_intensity < ridge))
    return table


@dataclass(frozen=True)
class SlabFloor:
    """The DRAM floor of a row-ordered SpMM that cuts X into column slabs of ``slab`` values."""

    slab: int
    """Values of X a slab holds per row (a power of two, at most k)."""
    floor_ms: float
    x_misses_per_row: float
    """X row slices read from DRAM per distinct X row slice (1.0: X read once a slab)."""


def x_slice_reads(indptr, indices, cols: int, l2_bytes: int, slice_bytes: int):
    """``model.xgather.x_gather`` with one X row slice of ``slice_bytes`` as the unit: the
    distinct slices a row-ordered pass gathers and the LRU L2's misses of them (A and Y pass
    through without taking L2 space, as in the SpMV model)."""
    from sparsescope.model.xgather import x_gather

    return x_gather(indptr, indices, cols=cols, l2_bytes=l2_bytes, stream_bytes_per_nnz=0.0,
                    value_bytes=slice_bytes, sector_bytes=slice_bytes)


def x_reuse_dram_floors(indptr, indices, cols: int, k: int, *, l2_bytes: int,
                        dram_bw_gb_s: float, value_bytes: int = 4, index_bytes: int = 4,
                        smallest_slab: int = 8) -> list[SlabFloor]:
    """DRAM floors of a kernel that walks the rows in order once per column slab, with X's
    row slices reused only while an LRU L2 of ``l2_bytes`` holds them (the compulsory bound's
    "X read once" assumes a perfect cache; a graph of 5 M rows at k = 64 has 1.28 GB of X)::

        A: (k / s) x (nnz x (index + value bytes) + (rows + 1) x index bytes)
        X: (k / s) x misses(s) x s x value bytes
        Y: rows x k x value bytes

    misses(s): ``model.xgather.x_gather`` with one X row slice of ``s x value_bytes`` bytes as
    the unit (distinct slices + LRU reuse misses; A and Y pass through without taking L2
    space, as in the SpMV model). One floor per slab width s = smallest_slab, 2x, ... <= k.
    Hand check (``tests/model``): rows [0: cols 0, 1], [1: col 0], k = 8, s = 8, all in L2:
    A 36 B, X 2 x 32 B, Y 64 B = 164 B, 164 ns at 1 GB/s."""
    rows, nnz = len(indptr) - 1, int(indptr[-1])
    floors = []
    slab = min(smallest_slab, k)
    while slab <= k:
        unit = slab * value_bytes
        g = x_slice_reads(indptr, indices, cols, l2_bytes, unit)
        passes = k / slab
        total = (passes * (nnz * (index_bytes + value_bytes) + (rows + 1) * index_bytes)
                 + passes * g.dram_sectors * unit + rows * k * value_bytes)
        floors.append(SlabFloor(slab, total / (dram_bw_gb_s * GB) * 1e3,
                                g.dram_sectors / max(1, g.distinct_sectors)))
        slab *= 2
    return floors
