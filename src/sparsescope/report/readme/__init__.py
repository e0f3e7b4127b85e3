"""A results folder's README written from the folder's own files (``sparsescope results readme``).

``files`` finds what a folder holds (its run files, env.txt, analyses, profile cases),
``facts`` reads each run's provenance and outcome counts, ``selection`` scores a kernel-selection
run (auto against the fastest own variant and the best library), ``speedups`` a variant sweep
against a baseline backend, ``render`` writes the generated block of the README and puts it in
place. Every number in the block is computed here from the folder's committed files; the
README's hand-written text outside the block is kept as it is.
"""

from __future__ import annotations

from sparsescope.report.readme.render import (
    BEGIN,
    END,
    ReadmeResult,
    generated_block,
    readme_for,
    write_readme,
)

__all__ = ["BEGIN", "END", "ReadmeResult", "generated_block", "readme_for", "write_readme"]
