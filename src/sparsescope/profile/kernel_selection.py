"""Which kernel launches ncu profiles for one case: the backend's own compute kernels of the one
checked call -- not the preparation's launches, the poisoning fill, a library call's helper
kernels (format conversions, fills, copies) or a second call.

ncu replays every launch it profiles once per pass (34 passes a launch with the default groups
on the H200, issue 35), so each launch left out saves that many replays. Two filters, both
decided before ncu starts, from the backend alone:

- **one call** (:attr:`KernelSelection.one_call`): the target program opens a profiler range
  (``cudaProfilerStart``/``Stop``) around the runner's checked call and nothing else, and ncu
  runs with ``--profile-from-start off``. The profiler API rather than an NVTX range: it is one
  runtime call each way through the library the case already loaded, the other two target
  modes (``cases``, ``workload``) use it too, and it needs neither the NVTX library nor ncu's
  NVTX range-name matching;
- **names** (:attr:`KernelSelection.kernel_filter`), by where the backend is declared
  (``registry.is_own``):

  - ours: every ``__global__`` function of ``backends/kernels/*.cu`` (:func:`own_kernel_names`),
    ``regex:^(a|b|...)$`` on ncu's ``function`` name base (no namespace, no template
    arguments). Inside the one call a kernel of ours can only be the backend's: its helper
    launches (CuPy's ``cupy_*`` fills and copies) are not ours;
  - libraries, by :data:`LIBRARY_KERNELS`: cuSPARSE's kernels live in namespace ``cusparse``
    (the H200 recordings: ``cusparse::csrmv_v3_kernel``,
    ``cusparse::<unnamed>::csr_partition_kernel``), matched on the ``demangled`` name base;
    the format conversion the cage15 recording shows (``convert_CsrToCoo_kernel``) is outside
    it, and so are the frameworks' fills and copies (``cupy_*``, ``at::native::*``);
  - a backend with no documented kernel names (row slicing through a framework, plug-ins):
    every launch of the one call.

The user's ``--kernel`` replaces the name filter; ``--whole-program`` drops the one-call range.
A derived name filter that matches none of the call's launches (a library version naming its
kernels otherwise) is dropped and the case profiled again, the reason kept
(:meth:`KernelSelection.without_names`).

Patterns are written to match either way ncu might apply them (a search, or a match of the whole
name: its documentation does not say): ``^...$`` around our names, ``.*`` around a namespace.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from importlib import resources

from sparsescope.hardware._gpu_runtime import KERNELS_DIR

#: cuSPARSE's kernels, by the namespace they are declared in (demangled names).
CUSPARSE = ("regex:.*cusparse::.*", "demangled",
            "cuSPARSE's kernels (namespace cusparse::; no format conversion, fill or copy)")
#: Ginkgo's CSR kernels (``gko::kernels::<executor>::csr::...``) and cuSPARSE, which its CSR
#: apply may call; its ``components`` fills and copies left out.
GINKGO = ("regex:.*(gko::kernels::[a-z_]+::csr::|cusparse::).*", "demangled",
          "Ginkgo's CSR kernels and cuSPARSE's (no fill or copy)")

#: Library backend -> (ncu ``--kernel-name``, ``--kernel-name-base``, what it selects). A
#: library backend not listed has no documented kernel names: every launch of its call.
LIBRARY_KERNELS: dict[str, tuple[str, str, str]] = {
    "torch-cusparse-i64": CUSPARSE, "torch-cusparse-i32": CUSPARSE,
    "cupy-cusparse-i32": CUSPARSE, "nvmath-cusparse-i32": CUSPARSE,
    "spmm-torch-i64": CUSPARSE, "spmm-torch-i32": CUSPARSE, "spmm-cupy-i32": CUSPARSE,
    "spmm-nvmath-i32": CUSPARSE, "spmm-ginkgo": GINKGO,
}

#: Kernel sources no backend runs: the device-ceiling probes of ``sparsescope ceilings``.
NOT_A_BACKEND = ("gpu_ceilings.cu",)

_LAUNCH_QUALIFIERS = {"__launch_bounds__", "__cluster_dims__", "__maxnreg__", "__align__",
                      "alignas", "__declspec"}
_NAME_THEN_PAREN = re.compile(r"\b([A-Za-z_]\w*)\s*\(")


def _closing_paren(text: str, open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i
    return -1


def global_function_names(source: str) -> tuple[str, ...]:
    """Names of the ``__global__`` functions of CUDA ``source``, in order, no repeats: the first
    identifier followed by ``(`` after each ``__global__`` that is not a launch qualifier
    (``__launch_bounds__(256, MINB)``, whose parentheses may nest)."""
    found: dict[str, None] = {}
    for mark in re.finditer(r"\b__global__\b", source):
        pos = mark.end()
        while (m := _NAME_THEN_PAREN.search(source, pos)) is not None:
            if m.group(1) not in _LAUNCH_QUALIFIERS:
                found[m.group(1)] = None
                break
            close = _closing_paren(source, m.end() - 1)
            if close < 0:
                break
            pos = close + 1
    return tuple(found)


@functools.cache
def own_kernel_names() -> tuple[str, ...]:
    """Every kernel of our backends: the ``__global__`` functions of ``backends/kernels/*.cu``
    (package data) but :data:`NOT_A_BACKEND`'s, sorted."""
    folder = resources.files("sparsescope").joinpath(*KERNELS_DIR)
    names: set[str] = set()
    for entry in folder.iterdir():
        if entry.name.endswith(".cu") and entry.name not in NOT_A_BACKEND:
            names.update(global_function_names(entry.read_text("utf-8")))
    return tuple(sorted(names))


def names_filter(names: tuple[str, ...] | list[str]) -> str:
    """``regex:^(a|b)$``: exactly these function names."""
    return "regex:^(" + "|".join(re.escape(n) for n in names) + ")$"


@dataclass(frozen=True)
class KernelSelection:
    """The launches ncu profiles for one case, and why (recorded with the profile)."""

    kernel_filter: str | None
    """ncu ``--kernel-name`` (a name or ``regex:...``); None: every launch in scope."""
    name_base: str = "function"
    """``--kernel-name-base`` the filter matches: ``function``, ``demangled`` or ``mangled``."""
    one_call: bool = True
    """Only the checked call's launches (a profiler range in the target program, ncu with
    ``--profile-from-start off``); False: every launch of the program."""
    origin: str = "none"
    """Where the name filter comes from: ``own kernels``, ``library``, ``user`` or ``none``."""
    what: str = "every launch"
    """What the name filter keeps, in words."""
    widened: str = ""
    """Why a derived name filter was dropped (it matched none of the call's launches); empty
    when it was not."""

    @property
    def derived(self) -> bool:
        """Whether the name filter was derived from the backend (and may be dropped)."""
        return self.origin in ("own kernels", "library") and self.kernel_filter is not None

    def without_names(self, why: str) -> KernelSelection:
        """The same scope without a name filter, ``why`` kept."""
        return replace(self, kernel_filter=None, name_base="function", origin="none",
                       what="every launch", widened=why)

    def describe(self) -> str:
        """One line: what is profiled, from where, and the ncu options that do it."""
        scope = ("of the checked call" if self.one_call
                 else "of the whole program (preparation and helper launches included)")
        options = []
        if self.kernel_filter:
            options.append(f"--kernel-name-base {self.name_base} --kernel-name "
                           f"{self.kernel_filter}")
        if self.one_call:
            options.append("--profile-from-start off")
        text = f"{self.what} {scope}"
        if self.widened:
            text += f" ({self.widened})"
        return text + (f" [ncu {', '.join(options)}]" if options else "")

    def as_dict(self) -> dict:
        return {"kernel_filter": self.kernel_filter, "name_base": self.name_base,
                "one_call": self.one_call, "origin": self.origin, "what": self.what,
                "widened": self.widened, "text": self.describe()}


def select_kernels(backend: str, *, kernel: str | None = None,
                   kernel_name_base: str | None = None,
                   whole_program: bool = False) -> KernelSelection:
    """The launches to profile for ``backend`` (a registry name or a variant ``NAME[...]``):
    the user's ``kernel`` filter when given (matched on ``kernel_name_base``, default
    ``function``), else the backend's own (module docstring); the checked call only unless
    ``whole_program``."""
    from sparsescope.registry import is_own

    one_call = not whole_program
    if kernel:
        return KernelSelection(kernel, kernel_name_base or "function", one_call, "user",
                               "the launches --kernel names")
    name = backend.split("[", 1)[0]
    if is_own(name):
        names = own_kernel_names()
        return KernelSelection(names_filter(names), "function", one_call, "own kernels",
                               f"our kernels ({len(names)} in backends/kernels/*.cu)")
    if name in LIBRARY_KERNELS:
        pattern, base, what = LIBRARY_KERNELS[name]
        return KernelSelection(pattern, base, one_call, "library", what)
    return KernelSelection(None, "function", one_call, "none",
                           f"every launch ({name}: no documented kernel names)")
