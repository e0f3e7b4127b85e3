"""How a kernel lays its work out: what the time model needs to know of a kernel besides the
bytes its format moves (``model.traffic.Traffic``).

A backend declares one :class:`KernelShape` per prepared case (``Backend.kernel_shape``): its
decomposition of the nonzeros over threads, its launch shape and resources, and its memory-level
parallelism -- how many nonzeros a thread keeps in flight per loop iteration and how many
dependent round trips to memory one iteration takes. Where the kernel's SASS is at hand the
backend takes the last two from it (``sass.mlp``) and says so in ``source``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sparsescope.model.issue_schedule import IssueSchedule

DECOMPOSITIONS = ("rows", "nnz")


@dataclass(frozen=True)
class KernelShape:
    """One kernel's work decomposition, launch shape and memory-level parallelism."""

    kernel: str
    """The kernel's name (``csr_scalar<float, int>``)."""
    decomposition: str
    """``rows``: a fixed number of threads per row (``threads_per_row``), a block holding
    ``block_threads / threads_per_row`` consecutive rows (after the format's sort); ``nnz``:
    the nonzeros split evenly over all threads (merge path, tiles, cuSPARSE's csrmv)."""
    block_threads: int
    grid_blocks: int
    threads_per_row: int = 1
    """Threads that share one row (``rows`` only); a warp covers ``32 / threads_per_row`` rows."""
    nnz_per_iteration: int = 1
    """Nonzeros one thread loads per loop iteration before using any of them (its unroll)."""
    remainder_step: int = 0
    """Nonzeros per iteration of the remainder loop that takes a row's last nonzeros (fewer
    than ``threads_per_row x nnz_per_iteration``); 0: the same step as the main loop."""
    peeled_nonzeros: int = 0
    """Nonzeros a lane's straight-line copies of the loop body take in all, chunks of powers
    of two (the SASS's gathers outside every loop: ``csr_scalar``'s 8 + 4 after its
    16-a-step loop, ``spmv_sell``'s odd UNROLL step of its 2 x UNROLL loop); each runs once
    where a lane's tail holds it (``model.iterations.split_iterations``). 0: none."""
    rounds_per_iteration: int = 2
    """Dependent round trips to memory per iteration: 2 for ``col[j] -> x[col[j]]``."""
    issue_schedule: IssueSchedule | None = None
    """The loop body's loads and waits in issue order, read from the SASS
    (``sass.issue_order``); where present the time model walks it for the iteration's time in
    place of ``rounds_per_iteration`` (a warp stops at every use of a load in flight, which a
    chain count misses). None: declared, staged, or a loop whose work is conditional or that
    holds another loop."""
    escape_share: tuple[tuple[int, float], ...] = ()
    """(entries per iteration, share of a warp's iterations that wait for one more dependent
    stream load than the issue schedule shows) for a few iteration sizes, declared by the
    backend from its format: delta16's iterations where a lane meets an escape, whose column
    is read from the escape slab between the offset and the gather (a block the schedule's
    every-iteration path leaves out). The model reads the size the SASS iterates by; empty:
    none."""
    setup_rounds: int = 1
    """Dependent round trips a block makes before its loop (the row, slice or tile pointers
    its loads start from)."""
    split_long_rows: int = 0
    """Rows longer than this are cut into pieces of this many nonzeros before the split (SELL's
    virtual rows, summed by a fix-up kernel); 0: rows are never cut."""
    entries_per_nonzero: float = 1.0
    """Stored entries the kernel's loop walks per nonzero of the matrix, padding of the rows
    aside: ``B x blocks / nnz`` for a 1 x B block format (fill values of blocks whose columns
    are not all nonzeros), 1 otherwise. ``nnz_per_iteration`` and ``split_long_rows`` count
    these entries."""
    block_width: int = 1
    """Columns of one stored entry of a 1 x B block format (B: the loop gathers x[c .. c + B)
    of a block at column c, one instruction each; ``model.l1_wavefronts``), 1 otherwise."""
    sort_window: int = 0
    """Rows sorted by length within windows of this many rows before the split (SELL-C-sigma's
    sigma); 0: the matrix's own row order."""
    resident_blocks_per_sm: int = 0
    """Blocks an SM holds at once, from the kernel's registers and shared memory (occupancy);
    0 when unknown (then :attr:`registers` decide, or else the device's thread limit)."""
    registers: int = 0
    """Registers per thread of the compiled kernel (its SASS resources), for the occupancy
    when :attr:`resident_blocks_per_sm` is not known (a plan made without the device); 0
    when unknown."""
    shared_bytes: int = 0
    """Static shared memory per block of the compiled kernel (its SASS resources)."""
    launches: int = 1
    """Kernel launches per call (a partition or fix-up kernel, a memset of the output)."""
    library: str = ""
    """The library route whose call this is (``cupy``, ``torch``, ``nvmath``: cuSPARSE through
    it): the call's fixed cost is that route's measured ``library_call_us``
    (``model.call_overhead``); "" for our own kernels, whose fixed cost is their launches'."""
    programmatic_launch: bool = False
    """Whether every kernel of the call waits (``griddepcontrol.wait``) before it reads what the
    launch before it writes or writes its outputs, so that back to back each may be launched
    with programmatic dependent launch (PDL, ``hardware.programmatic_launch``): each launch
    then costs the measured PDL launch (``model.call_overhead``). The tile kernels
    (``spmv_tile``, and ``spmv_fixup`` after them)."""
    fixup: bool = False
    """Whether the last launch is ``spmv_fixup``: rows cut by the decomposition summed from the
    partial slots the first launch wrote. Beyond its launch it waits on its own two dependent
    loads: the split-row list from DRAM, then the partial slots from the L2."""
    finish_split: bool = False
    """Whether split rows are finished inside the one launch (the tile kernels' ``finish=1``):
    the tile that stores a row's last partial waits, after its own work, on a chain of five
    dependent trips -- its partial's fence (L2), the row's slot and partial range (two loads,
    from DRAM after a flush), the row's counter atomic (L2), the partials themselves (L2) --
    instead of a ``spmv_fixup`` launch."""
    row_search: bool = False
    """Whether the call searches the row offsets before its product (cuSPARSE's
    ``csr_partition_kernel``, run by every call that was not preprocessed: a binary search for
    each block's first row), a dependent load per level (``model.call_overhead``)."""
    staged: bool = False
    """Streams staged in shared memory by cp.async ahead of use (decoupled access / execute):
    their round trip overlaps the gathers instead of preceding them."""
    staged_path: tuple[int, int] | None = None
    """A staged loop's (every-iteration, staging) instructions from its SASS
    (``sass.staged_path``): a warp of ``n`` iterations issues ``n x every + (n - 1) x
    staging`` in its loop (``model.onchip.warp_instructions``), not ``n`` whole bodies. None:
    not staged, or not read."""
    x_in_l1: bool = True
    """The x gathers go through L1 (``ld.global.nc`` / default caching), which keeps a block's x
    sectors while it runs: one L2 request per distinct sector a block touches. False for
    gathers that bypass L1 (``ld.global.cg``): one request per sector per warp instruction."""
    onchip_x_entries: int = 0
    """The first x entries, ``x[0, n)``, that an SM serves from L1 / shared memory (the hub
    kernels' pinned columns: the hot ones only where the popular columns come first)."""
    onchip_x_copies: int = 0
    """Copies of those entries filled from L2 once a call: one per block that holds them in
    shared memory, one per SM that keeps them in L1 (0: no on-chip entries)."""
    row_windows: tuple[int, ...] = ()
    """How the kernel reads a CSR row's values and indices itself, ``threads_per_row`` lanes a
    row (``csr_scalar``, ``csr_vector``): ``(u, w, p1, ...)``, the first ``n mod u`` entries
    of a lane one at a time, then ``w`` a time, then peeled copies of ``p1``, ... entries
    (``model.row_windows``: a window that starts inside a sector fetches it again); () for a
    kernel that reads its streams coalesced across rows (SELL, tiles)."""
    loop_instructions: int = 0
    """Warp instructions one loop iteration issues (SASS: the loop's body, ``sass.mlp``);
    0 when unknown."""
    remainder_instructions: int = 0
    """Warp instructions one iteration of the remainder loop issues (SASS); 0 when unknown."""
    other_instructions: int = 0
    """Warp instructions a warp issues once, outside its loops (set-up, epilogue; SASS)."""
    instructions_per_nonzero: float = 0.0
    """Warp instructions per nonzero of a library kernel whose SASS is not read here (counted
    by a profiler: ncu's ``smsp__inst_executed``); used in place of the three above."""
    local_bytes_per_iteration: int = 0
    """Bytes one thread moves to and from local memory per loop iteration (register spills
    and refills, ``LDL``/``STL`` in the SASS loop); 0 without spills."""
    local_store_bytes_per_iteration: int = 0
    """The stores (``STL``, the spills) of :attr:`local_bytes_per_iteration`."""
    local_frame_bytes: int = 0
    """One thread's local-memory frame (SASS: the highest ``LDL``/``STL`` offset + width)."""
    cuda_source: str = ""
    """The own kernel's CUDA file (``spmv_own.cu``) whose SASS can refine the declared figures
    (``sass.kernel_shape.refine``); "" for a library kernel."""
    source: str = "declared by the backend"
    """Where the figures come from: ``declared by the backend`` (its template parameters) or
    ``SASS of <kernel>`` (``sass.mlp``) or the profile they were read from."""

    def __post_init__(self) -> None:
        if self.decomposition not in DECOMPOSITIONS:
            raise ValueError(f"decomposition must be one of {DECOMPOSITIONS}, "
                             f"got {self.decomposition!r}")
        if self.block_threads <= 0 or self.grid_blocks < 0:
            raise ValueError("block_threads must be positive and grid_blocks non-negative")
        if not 1 <= self.threads_per_row <= 32 or 32 % self.threads_per_row:
            raise ValueError(f"threads_per_row must divide 32, got {self.threads_per_row}")

    @property
    def warps_per_block(self) -> int:
        """ceil(block_threads / 32)."""
        return math.ceil(self.block_threads / 32)

    @property
    def label(self) -> str:
        """The work decomposition without the staging or the unroll, for pairing a staged
        kernel with its unstaged sibling of the same format."""
        if self.decomposition == "nnz":
            return "nonzeros split evenly"
        return f"{self.threads_per_row} thread{'s' if self.threads_per_row > 1 else ''} per row"


def escape_iteration_share(shape: KernelShape) -> float:
    """The declared share of iterations that wait for an escape column
    (:attr:`KernelShape.escape_share`), for the largest declared iteration size not above the
    shape's ``nnz_per_iteration`` (the smallest size when all are above it); 0 when none is
    declared. Hand check: ``((4, 0.1), (8, 0.3))`` at 6 entries an iteration -> 0.1; at 2 ->
    0.1; at 8 -> 0.3."""
    if not shape.escape_share:
        return 0.0
    sizes = sorted(shape.escape_share)
    fitting = [s for s in sizes if s[0] <= shape.nnz_per_iteration]
    return float((fitting[-1] if fitting else sizes[0])[1])


#: Registers of one SM (every NVIDIA GPU since Volta: 64 K 32-bit registers).
REGISTERS_PER_SM = 65536
#: Shared memory one SM can give its blocks (Hopper: 228 KB) and what each block costs beyond
#: its own (1 KB reserved by the system).
SMEM_PER_SM = 228 * 1024
SMEM_RESERVED_PER_BLOCK = 1024


def blocks_per_sm(registers: int, block: int, shared_bytes: int = 0, *,
                  max_threads_per_sm: int = 2048, registers_per_sm: int = REGISTERS_PER_SM,
                  smem_per_sm: int = SMEM_PER_SM) -> int:
    """Blocks of ``block`` threads an SM holds with ``registers`` per thread and
    ``shared_bytes`` of static shared memory (registers allocated in units of 8 a thread)::

        min(max_threads / block, registers_per_sm / (ceil8(regs) x block),
            smem_per_sm / (smem + 1 KB))

    Hand check: 47 registers, 512 threads -> 65536 / (48 x 512) = 2."""
    by_regs = registers_per_sm // (-(-max(1, registers) // 8) * 8 * block)
    by_smem = smem_per_sm // (shared_bytes + SMEM_RESERVED_PER_BLOCK)
    return max(1, min(max_threads_per_sm // block, by_regs, by_smem))


def resident_blocks(shape: KernelShape, max_threads_per_sm: int, max_blocks_per_sm: int, *,
                    registers_per_sm: int = REGISTERS_PER_SM,
                    smem_per_sm: int = SMEM_PER_SM) -> int:
    """Blocks an SM holds at once::

        min(occupancy, floor(max_threads_per_sm / block_threads), max_blocks_per_sm)

    occupancy: ``shape.resident_blocks_per_sm`` (the device's answer for the compiled kernel),
    else :func:`blocks_per_sm` of the SASS's ``registers`` and ``shared_bytes``, else no limit
    of its own. Hand checks: 256-thread blocks, 2,048 threads per SM, 32 blocks max, occupancy
    unknown -> 8; the same with 40 registers a thread -> 65536 / (40 x 256) = 6.
    """
    by_threads = max(1, max_threads_per_sm // shape.block_threads)
    limit = min(by_threads, max_blocks_per_sm)
    if shape.resident_blocks_per_sm > 0:
        limit = min(limit, shape.resident_blocks_per_sm)
    elif shape.registers > 0:
        limit = min(limit, blocks_per_sm(shape.registers, shape.block_threads,
                                         shape.shared_bytes,
                                         max_threads_per_sm=max_threads_per_sm,
                                         registers_per_sm=registers_per_sm,
                                         smem_per_sm=smem_per_sm))
    return limit
