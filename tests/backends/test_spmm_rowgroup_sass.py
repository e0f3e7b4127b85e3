"""SASS of the rowgroup and colmajor SpMM kernels, compiled with nvcc for sm_90 (no GPU needed;
skipped without nvcc): vector loads and stores where the design says, group shuffles, no
spills, registers within ``__launch_bounds__(256, 2)`` for the rowgroup instances the host rules
pick (k = 8, 64, 600 / float32, 512-column slabs in float64, k = 3 and k = 1)."""

from __future__ import annotations

import shutil

import pytest

from sparsescope.backends._gpu import kernel_source

ROWGROUP = ("float, int, 4, 2, 1, 4, 8, 2", "float, int, 4, 16, 1, 2, 8, 2",
            "float, int, 4, 32, 3, 1, 2, 2", "double, long long, 2, 32, 8, 1, 1, 2",
            "float, int, 1, 4, 1, 4, 8, 2", "float, int, 1, 1, 1, 4, 4, 2",
            "double, int, 1, 32, 16, 1, 1, 2",
            "float, int, 4, 32, 1, 1, 4, 4",  # MINB 4: 64 registers, BATCH 4 fits them
            # narrower VEC on a grid under a wave: k = 64 in float2 lanes, k = 8 in float ones
            "float, int, 2, 32, 1, 2, 8, 4", "float, int, 1, 8, 1, 4, 8, 4")
BLOCK_SUM = ("float, int, 4, 2, 1, 4, 8, 2, true", "float, int, 4, 16, 1, 2, 8, 2, true",
             "float, int, 2, 32, 1, 2, 8, 2, true", "float, int, 1, 4, 1, 4, 8, 2, true",
             "double, long long, 2, 32, 8, 1, 1, 2, true")
"""The instances that sum cut rows in shared memory (``block_sum``, MINB 2)."""
ELL = ("float, int, 4, 16, 1, 2, 8, 2, false, true", "float, int, 4, 2, 1, 4, 8, 2, false, true",
       "float, int, 2, 32, 1, 2, 8, 2, false, true", "float, int, 1, 8, 1, 4, 8, 2, false, true",
       "double, long long, 2, 32, 8, 1, 1, 2, false, true")
"""The instances on ELL rows (``ell``: no slice pointers), by the rules at k = 64 and 8, with
auto's narrower VEC, and float64 at k = 512."""
COLMAJOR = ("float, int, 8, 2, false", "double, long long, 4, 4, false", "float, int, 1, 8, false",
            "float, int, 8, 4, false", "float, int, 4, 4, false",
            "float, int, 8, 4, true")  # SEG: a cut row's slices summed across the warp
COLMAJOR_ELL = ("float, int, 8, 2, false, true", "float, int, 1, 8, false, true",
                "double, long long, 4, 4, false, true")
"""colmajor on ELL rows (``ell``: no slice pointers) at the rule's tile for k >= 8, the narrow
tile C = 1, and float64 at k = 4."""


def _instance(kernel: str, args: str) -> str:
    t, i = (p.strip() for p in args.split(",")[:2])
    params = ("long long, int, int, int" if kernel == "spmm_rowgroup"
              else "long long, long long, long long, int, int, int")
    last = ", int"   # ell_width
    return (f"template __global__ void {kernel}<{args}>({params}, const {i}*, const {i}*, "
            f"const {i}*, const {t}*, const {t}*, {t}*{last});")


def _host_name(demangled: str) -> str:
    """A compiled instance's name as the tests spell it: rowgroup's defaulted BLOCKSUM and ELL
    flags (", false, false>", ", true, false>") left out, as ``rowgroup_kernel_name`` does;
    colmajor's defaulted ELL flag left out (its SEG flag kept, as :data:`COLMAJOR` has it)."""
    name = demangled.split("(")[0]
    if name.startswith("void spmm_rowgroup"):
        name = name.replace(", false, false>", ">").replace(", true, false>", ", true>")
    elif name.startswith("void spmm_colmajor") and name.count(",") == 5:
        name = name.removesuffix(", false>") + ">" if name.endswith(", false>") else name
    return name


@pytest.fixture(scope="module")
def sass(tmp_path_factory):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not found")
    from sparsescope.sass.analysis import analyse_source

    folder = tmp_path_factory.mktemp("spmm_rowgroup_sass")
    lines = []
    for source, kernel, instances in (("spmm_rowgroup.cu", "spmm_rowgroup",
                                       ROWGROUP + BLOCK_SUM + ELL),
                                      ("spmm_colmajor.cu", "spmm_colmajor",
                                       COLMAJOR + COLMAJOR_ELL)):
        path = folder / source
        path.write_text(kernel_source(source))
        lines.append(f'#include "{path}"')
        lines += [_instance(kernel, args) for args in instances]
    wrapper = folder / "instances.cu"
    wrapper.write_text("\n".join(lines) + "\n")
    return {_host_name(a.demangled): a for a in analyse_source(wrapper, arch="sm_90")}


def _accesses(analysis):
    return {(i.opcode, i.access_bytes) for i in analysis.instructions}


@pytest.mark.parametrize("args", ROWGROUP)
def test_rowgroup_sass(sass, args):
    analysis = sass[f"void spmm_rowgroup<{args}>"]
    res = analysis.resources
    assert res.registers <= 128 and not res.local_bytes and not res.spill_store_bytes
    minb = int(args.split(",")[-1])   # __launch_bounds__(256, MINB): the register cap
    assert res.registers <= 65536 // (256 * minb)
    t, _, vec, group = (p.strip() for p in args.split(",")[:4])
    width = (4 if t == "float" else 8) * int(vec)
    accesses = _accesses(analysis)
    assert ("LDG", width) in accesses and ("STG", width) in accesses  # X and Y, VEC-wide
    shuffles = any(i.opcode == "SHFL" for i in analysis.instructions)
    assert shuffles == (int(group) > 1)  # G = 1: a lane per row, nothing to shuffle
    assert any(i.opcode in ("RED", "ATOM", "REDG", "ATOMG") for i in analysis.instructions)


@pytest.mark.parametrize("args", BLOCK_SUM)
def test_rowgroup_block_sum_sass(sass, args):
    """The shared-memory sum of cut rows: no spills under MINB 2's 128 registers (under MINB
    4's 64 the float32 instances spilled 12-32 bytes), a block barrier, the sums through
    shared memory, and no atomics left (every cut row is stored by its last group); its
    batch of gathers still issued before the first FMA."""
    analysis = sass[f"void spmm_rowgroup<{args}>"]
    res = analysis.resources
    assert res.registers <= 128 and not res.local_bytes and not res.spill_store_bytes
    opcodes = {i.opcode for i in analysis.instructions}
    assert "BAR" in opcodes and "STS" in opcodes and "LDS" in opcodes
    assert not opcodes & {"RED", "ATOM", "REDG", "ATOMG"}
    batch, chunks = int(args.split(",")[6]), int(args.split(",")[4])
    first_fma = next(n for n, i in enumerate(analysis.instructions)
                     if i.opcode in ("FFMA", "DFMA"))
    early = [i for i in analysis.instructions[:first_fma] if i.opcode == "LDG"]
    assert len(early) >= batch * chunks


@pytest.mark.parametrize("args", ELL)
def test_rowgroup_ell_sass(sass, args):
    """On ELL rows: no spills within the launch bound's registers (counting a stage's real
    pairs by ballots took 128 registers and spilled), X and Y VEC-wide, no atomics and no
    shared memory (no row is cut), and fewer global loads than the sliced instance of the
    same shape: the slice pointers are not read."""
    analysis = sass[f"void spmm_rowgroup<{args}>"]
    res = analysis.resources
    minb = int(args.split(",")[7])
    assert res.registers <= 65536 // (256 * minb)
    assert not res.local_bytes and not res.spill_store_bytes
    t, _, vec = (p.strip() for p in args.split(",")[:3])
    width = (4 if t == "float" else 8) * int(vec)
    accesses = _accesses(analysis)
    assert ("LDG", width) in accesses and ("STG", width) in accesses
    opcodes = {i.opcode for i in analysis.instructions}
    assert not opcodes & {"RED", "ATOM", "REDG", "ATOMG", "BAR", "LDS", "STS"}
    sliced = sass[f"void spmm_rowgroup<{args.rsplit(', false, true', 1)[0]}>"] \
        if args.rsplit(", false, true", 1)[0] in ROWGROUP else None
    if sliced is not None:
        loads = sum(i.opcode == "LDG" for i in analysis.instructions)
        assert loads < sum(i.opcode == "LDG" for i in sliced.instructions)


@pytest.mark.parametrize("args", COLMAJOR)
def test_colmajor_sass(sass, args):
    analysis = sass[f"void spmm_colmajor<{args}>"]
    res = analysis.resources
    assert not res.local_bytes and not res.spill_store_bytes
    seg = args.endswith("true")  # only the segmented instance shuffles
    assert any(i.opcode == "SHFL" for i in analysis.instructions) == seg
    width = 4 if args.startswith("float") else 8
    assert ("STG", width) in _accesses(analysis)


@pytest.mark.parametrize("args", COLMAJOR_ELL)
def test_colmajor_ell_sass(sass, args):
    """On ELL rows: no spills, scalar stores of Y, no atomics and no shuffles (no row is cut,
    no scan), and fewer global loads than the sliced instance of the same tile: the slice
    pointers are not read."""
    analysis = sass[f"void spmm_colmajor<{args}>"]
    res = analysis.resources
    assert not res.local_bytes and not res.spill_store_bytes
    opcodes = {i.opcode for i in analysis.instructions}
    assert not opcodes & {"RED", "ATOM", "REDG", "ATOMG", "SHFL"}
    width = 4 if args.startswith("float") else 8
    assert ("STG", width) in _accesses(analysis)
    sliced = sass[f"void spmm_colmajor<{args.removesuffix(', true')}>"]
    loads = sum(i.opcode == "LDG" for i in analysis.instructions)
    assert loads < sum(i.opcode == "LDG" for i in sliced.instructions)


@pytest.mark.parametrize("args", ["float, int, 8, 2, false", "float, int, 4, 4, false",
                                  "float, int, 1, 8, false", "float, int, 8, 4, false",
                                  "float, int, 8, 4, true", "float, int, 8, 2, false, true",
                                  "float, int, 1, 8, false, true"])
def test_colmajor_issues_a_batch_of_gathers_before_its_fmas(sass, args):
    """Every float32 instance the host picks (k >= 8: C 8, BATCH 2; k = 4 and k = 1; the short
    slices' BATCH 4, with and without the scan): a batch's BATCH pairs (col and val: 2 loads
    each) and all BATCH x C gathers of X issued before its first FFMA, so a batch costs one
    round trip. An FFMA among them waits on the first gathers before the rest issue: the
    pad test in <8, 2> did that, 8-20 % slower on uncut matrices. SEG: unguarded gathers; a
    guarded gather each in a convergence region made it 2.3-2.5 us slower a call."""
    _, _, c, batch = (p.strip() for p in args.split(",")[:4])
    loads = 2 * int(batch) + int(batch) * int(c)
    instructions = sass[f"void spmm_colmajor<{args}>"].instructions
    first_ffma = next(n for n, i in enumerate(instructions) if i.opcode == "FFMA")
    early = [i for i in instructions[:first_ffma] if i.opcode == "LDG"]
    assert len(early) >= loads
    loop = instructions[first_ffma - loads:first_ffma]
    assert not any(i.opcode in ("BSSY", "BSYNC") for i in loop)
    ffmas = [n for n, i in enumerate(instructions) if i.opcode == "FFMA"][:int(batch) * int(c)]
    assert not any(i.opcode == "LDG" for i in instructions[ffmas[0]:ffmas[-1]])  # no gather late


@pytest.mark.parametrize("args", ["float, int, 4, 2, 1, 4, 8, 2",
                                  "float, int, 4, 32, 3, 1, 2, 2"])
def test_rowgroup_batches_its_gathers(sass, args):
    """The stage's (col, val) pairs and BATCH x CHUNKS float4 gathers of X are issued before
    the first FMA that needs one (8 for k = 8: BATCH 8; 6 for k = 600: BATCH 2 x CHUNKS 3)."""
    instructions = sass[f"void spmm_rowgroup<{args}>"].instructions
    first_ffma = next(n for n, i in enumerate(instructions) if i.opcode == "FFMA")
    early = [i for i in instructions[:first_ffma] if i.opcode == "LDG"]
    _, _, _, _, chunks, _, batch, _ = (int(p) if p.strip().isdigit() else p
                                       for p in args.split(","))
    assert sum(i.access_bytes == 16 for i in early) >= batch * chunks
    assert sum(i.access_bytes == 4 for i in early) >= 2
