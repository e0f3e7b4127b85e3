"""SASS analysis: extract and parse SASS; resources, occupancy, instruction mix, control flow,
dependent global-load chains, and per-instruction stall mapping.

Typical use::

    from sparsescope.sass import analyse_file, render_markdown
    kernels = analyse_file("libcusparse.so.12", kernel="csrmv_v3_kernel", arch="sm_90")
    print(render_markdown(kernels))

Modules: :mod:`.extract` (tools, compiling), :mod:`.listing` (listing readers),
:mod:`.instructions`, :mod:`.resources`, :mod:`.occupancy`, :mod:`.cfg`, :mod:`.dataflow`,
:mod:`.params`, :mod:`.stall_map`, :mod:`.analysis`, :mod:`.render`. Nothing here imports a GPU
library; the CUDA command-line tools are run on use.
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
from sparsescope.sass.render import render_markdown
from sparsescope.sass.resources import KernelResources

__all__ = ["Instruction", "KernelAnalysis", "KernelListing", "KernelResources", "LoadChain",
           "LoadRef", "Occupancy", "analyse_file", "analyse_listing", "analyse_source",
           "occupancy", "parse_instruction", "read_listing", "render_markdown",
           "resources_from_text"]
