"""The profile stage: run a case under Nsight Compute, read ``.ncu-rep`` files and ncu's CSV
exports into typed records, and compute what the report stage renders (its Markdown and figures
are the report stage's ``report.profile_render``).

Modules: ``metrics`` (metric groups and stall names as data), ``records`` (KernelProfile,
RuleMessage, InstructionSample), ``read_report`` / ``read_csv`` (the two readers; raw, details and
``ncu --csv`` long layouts, older stall forms), ``analysis`` (seed 4.1-4.3 tables),
``hotspots`` (hottest SASS instructions, through the SASS stage's stall map), ``ceilings``
(measured / spec / ncu-peak ceilings), ``latency`` (Little's law, DAE estimates),
``instruction_roofline`` and ``classic_roofline`` (Ding & Williams; FLOP/byte), ``section``
(files -> the launches, ceilings and hotspots a section shows), ``kernel_selection`` (which
launches a case's profile holds: the backend's own kernels of the checked call), ``collect``
(ncu command lines, running, errors, passes), ``target`` (the program ncu profiles). No
module imports a GPU library; ``ncu_report`` is imported where it is used.
"""

from sparsescope.profile.errors import ProfileError
from sparsescope.profile.records import InstructionSample, KernelProfile, RuleMessage

__all__ = ["InstructionSample", "KernelProfile", "ProfileError", "RuleMessage", "load"]


def load(path, details=None):
    """Kernel profiles from a ``.ncu-rep`` report or a ``--page raw`` CSV export, compressed
    (xz or gzip) or not (with an optional ``--page details`` export for the rule messages),
    chosen by the file's content."""
    from pathlib import Path

    from sparsescope._compressed import COMPRESSED_SUFFIXES, compression_of
    from sparsescope.profile.read_report import REPORT_MAGIC, load_profiles

    path = Path(path)
    if details is not None and path.suffix.lower() == ".ncu-rep":
        from sparsescope.errors import UsageError

        raise UsageError(f"{path}: a .ncu-rep report holds its rule messages; --details is for "
                         "CSV exports")
    if path.name.lower().endswith((".csv", *(f".csv{s}" for s in COMPRESSED_SUFFIXES))):
        from sparsescope.profile.read_csv import load_profiles_csv

        return load_profiles_csv(path, details)
    if path.is_file() and path.suffix.lower() != ".ncu-rep":
        with path.open("rb") as handle:
            head = handle.read(4096)
        packed = compression_of(head) is not None   # a compressed export, as results keep them
        if head and not head.startswith(REPORT_MAGIC) and (packed or b"\x00" not in head):
            from sparsescope.profile.read_csv import load_profiles_csv

            return load_profiles_csv(path, details)
    return load_profiles(path)
