"""What a command's matrix arguments select, through the one parser of suite names
(:func:`sparsescope.matrices.names.parse_matrix_name`): one suite's entries at one scale, or
files; one suite entry (``profile run``, ``matrices stats``); a matrix loaded by its name.

The commands call these on the text a user typed, so an old form warns here
(:class:`~sparsescope.matrices.names.MatrixNameDeprecation`), once per name.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from sparsescope.errors import UsageError
from sparsescope.matrices.names import (
    CANONICAL_FORM,
    SUITE_PREFIX,
    MatrixNameDeprecation,
    SuiteName,
    check_suite,
    deprecation_note,
    listed_entries,
    parse_matrix_name,
    resolve_scale,
)
from sparsescope.matrices.suites import SUITES, build_entry, find_entry, suite_entries


def user_matrix_name(text: str, *, suite_option: bool = False) -> SuiteName | None:
    """:func:`parse_matrix_name`, warning (:class:`MatrixNameDeprecation`) once for an old
    form: what a command calls on the text a user typed."""
    name = parse_matrix_name(text, SUITES, suite_option=suite_option)
    if name is not None and name.deprecated:
        warnings.warn(deprecation_note(name), MatrixNameDeprecation, stacklevel=2)
    return name


def named_entries(name: SuiteName, scale: float = 1.0) -> list:
    """The ``SuiteEntry`` records ``name`` names (every entry when it names none), at its
    ``@SCALE`` or ``scale``, checked (:func:`check_suite`)."""
    check_suite(name, SUITES)
    return suite_entries(name.suite_arg, scale=resolve_scale(name, scale))


@dataclass(frozen=True)
class MatrixSelection:
    """What a command's matrix arguments select: one suite's entries, or files."""

    suite: str | None = None
    """The suite's name, or None (files)."""
    entries: tuple[str, ...] = ()
    """The suite's entries named, in order; empty: every entry."""
    files: tuple[str, ...] = ()
    """Matrix files (and ``suitesparse:Group/Name``) when no suite is named."""
    scale: float = 1.0
    """The scale to generate the suite at (the name's ``@SCALE`` or the command's)."""

    @property
    def suite_arg(self) -> str | None:
        """``NAME`` or ``NAME#A,B`` (what ``api.run``'s ``suite`` takes), None for files."""
        if self.suite is None:
            return None
        return self.suite + (f"#{','.join(self.entries)}" if self.entries else "")


def matrix_selection(suite: str | None = None, matrices: Sequence[str] = (), *,
                     scale: float = 1.0, entries: Sequence[str] = ()) -> MatrixSelection:
    """The matrices a command's arguments name: ``suite`` (a ``--suite`` option: ``NAME``,
    ``suite:NAME#ENTRY@SCALE`` or an old form), ``matrices`` (files or suite names, e.g.
    ``suite:seed6#cant``) and ``entries`` (``model --matrix NAME``: entries of the suite).
    Every suite name must name the same suite and scale, and is not mixed with files (a run
    records one suite or files); the suite and entries are checked here, before anything is
    loaded. Old forms warn once each."""
    names: list[SuiteName] = []
    if suite:
        names.append(user_matrix_name(suite, suite_option=True))
    files: list[str] = []
    for text in matrices:
        name = user_matrix_name(text)
        if name is None:
            files.append(text)
        else:
            names.append(name)
    if not names:
        if entries:
            raise UsageError(f"--matrix {entries[0]} names an entry of a suite: give the suite "
                             f"(--suite NAME, or {CANONICAL_FORM})")
        return MatrixSelection(files=tuple(files), scale=scale)
    if files:
        raise UsageError(f"{names[0].text} and {files[0]}: suite matrices and files in one "
                         f"command; run them apart (a run records one suite, or files)")
    suites = {n.suite for n in names}
    if len(suites) > 1:
        raise UsageError(f"{' and '.join(n.text for n in names)}: matrices of "
                         f"{len(suites)} suites in one command; one suite at a time")
    scales = {n.scale for n in names if n.scale is not None}
    if len(scales) > 1:
        raise UsageError(f"{' and '.join(n.text for n in names)}: different @SCALEs; one "
                         f"scale per command")
    first = names[0]
    whole = any(not n.entries for n in names) and not entries
    chosen = () if whole else tuple(dict.fromkeys(e for n in names for e in n.entries))
    chosen = chosen + tuple(e for e in dict.fromkeys(entries) if e not in chosen)
    merged = SuiteName("", first.suite, chosen, next(iter(scales), None))
    if len(names) > 1 or entries:  # errors name the merged selection, else the text given
        merged = SuiteName(merged.canonical, first.suite, chosen, merged.scale)
    else:
        merged = SuiteName(first.text, first.suite, chosen, merged.scale)
    check_suite(merged, SUITES)
    resolved = resolve_scale(merged, scale)
    return MatrixSelection(merged.suite, chosen, (), scale if resolved is None else resolved)


@dataclass(frozen=True)
class SuiteMatrix:
    """One entry of a suite, named: what ``profile run`` and ``matrices stats`` take."""

    suite: str
    entry: str
    scale: float


def one_suite_matrix(suite: str | None = None, matrix: str | None = None, *,
                     scale: float = 1.0) -> SuiteMatrix | None:
    """The one suite entry ``--suite`` / ``--matrix`` name (``--matrix suite:NAME#ENTRY``,
    ``--suite suite:NAME#ENTRY``, ``--suite NAME --matrix ENTRY``, or an old form), checked;
    None when ``matrix`` is a file (no suite given). A name of no entry, or of several, is a
    :class:`UsageError` listing the entries."""
    name = None if matrix is None else user_matrix_name(matrix)
    if suite:
        outer = user_matrix_name(suite, suite_option=True)
        if name is not None:
            raise UsageError(f"--suite {suite} and --matrix {matrix}: name the matrix once "
                             f"({CANONICAL_FORM})")
        if matrix is not None:
            if outer.entries:
                raise UsageError(f"--suite {suite} already names its entries; leave --matrix "
                                 f"{matrix} out")
            whole = SuiteName("", outer.suite, (matrix,), outer.scale)
            name = SuiteName(whole.canonical, outer.suite, (matrix,), outer.scale, outer.form)
        else:
            name = outer
    if name is None:
        return None
    found = check_suite(name, SUITES)
    if len(name.entries) != 1:
        known = listed_entries([e.name for e in found.entries])
        what = "no entry" if not name.entries else f"{len(name.entries)} entries"
        raise UsageError(f"{name.text}: names {what} of suite {name.suite}; one matrix is "
                         f"wanted: {SUITE_PREFIX}{name.suite}#ENTRY (entries: {known})")
    resolved = resolve_scale(name, scale)
    return SuiteMatrix(name.suite, name.entries[0], scale if resolved is None else resolved)


def load_named_matrix(text: str, *, scale: float = 1.0, seed: int = 0, strict: bool = False):
    """A ``matrices.Matrix``: one suite entry (``suite:NAME#ENTRY[@SCALE]`` or an old form,
    generated with ``seed``), else the file (or ``suitesparse:Group/Name``) ``text`` names."""
    from sparsescope.matrices.io import read_matrix

    one = one_suite_matrix(matrix=text, scale=scale)
    if one is None:
        return read_matrix(text, strict=strict)
    return build_entry(find_entry(one.suite, one.entry, one.scale), seed)
