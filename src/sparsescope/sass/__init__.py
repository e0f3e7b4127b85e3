"""SASS analysis: extract and parse SASS; resources, occupancy, instruction mix, control flow,
dependent global-load chains, and per-instruction stall mapping.

Typical use::

    from sparsescope.sass import analyse_file
    kernels = analyse_file("libcusparse.so.12", kernel="csrmv_v3_kernel", arch="sm_90")
    for k in kernels:
        print(k.demangled, k.instruction_count, k.max_chain_depth)

The Markdown section of an analysis is the report stage's
(``report.sass_render.render_markdown``).

Modules: :mod:`.extract` (tools, compiling), :mod:`.listing` (listing readers),
:mod:`.instructions`, :mod:`.resources`, :mod:`.occupancy`, :mod:`.cfg`, :mod:`.dataflow`,
:mod:`.params`, :mod:`.stall_map`, :mod:`.analysis`; own kernels' shapes from their SASS:
:mod:`.kernel_shape`, compiled in :mod:`.programs` (the instances of every source in as few
compiler runs as idle cores want), kept on disk by :mod:`.sass_cache`. Nothing here imports a
GPU library; the CUDA command-line tools are run on use.
"""

from sparsescope.sass.analysis import (
                                       KernelAnalysis,
                                       LoadChain,
                                       LoadRef,
                                       analyse_file,
                                       analyse_listing,
                                       analyse_source,
                                       resources_from_text,
)
from sparsescope.sass.instructions import Instruction, parse_instruction
from sparsescope.sass.listing import KernelListing, read_listing
from sparsescope.sass.occupancy import Occupancy, occupancy
from sparsescope.sass.resources import KernelResources

__all__ = ["Instruction", "KernelAnalysis", "KernelListing", "KernelResources", "LoadChain",
           "LoadRef", "Occupancy", "analyse_file", "analyse_listing", "analyse_source",
           "occupancy", "parse_instruction", "read_listing", "resources_from_text"]
