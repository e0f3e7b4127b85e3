"""One way to name the matrices of a suite: ``suite:NAME[#ENTRY[,ENTRY...]][@SCALE]``.

Every command that takes a matrix (``run``, ``model``, ``matrices stats``, ``profile run``,
``sweep``) reads a suite's matrices through :func:`parse_matrix_name`, the one parser:

* ``suite:seed6`` -- every entry of suite ``seed6``;
* ``suite:seed6#cant`` -- its entry ``cant``; ``suite:seed6#cant,pwtk`` -- two, in that order;
* ``suite:seed6#cant@0.05`` -- generated at 5 % scale (``@SCALE`` may also come before
  ``#ENTRY``: ``suite:seed6@0.05#cant``, the order of a sweep's source references).

The command's ``--scale`` applies where the name carries no ``@SCALE``; a name's ``@SCALE``
beside a ``--scale`` other than 1 (the default) and other than it is a usage error (neither
silently wins). :mod:`sparsescope.matrices.selection` turns a command's arguments into what
they select, through this parser.

Older forms are still read, as aliases that warn (:class:`MatrixNameDeprecation`, printed by
the CLI as one ``sparsescope: warning:`` line on stderr, never on ``--json`` stdout):
``NAME#ENTRY`` (``run --suite 'seed6#cant'``) and ``NAME:ENTRY`` (``matrices stats
seed6:cant``), where NAME is a known suite and no file of that name exists. A bare ``NAME``
given to a ``--suite`` option is the suite itself, not an alias.

Errors name the text as given: an unknown suite lists the known suites, an unknown entry the
suite's entries (the closest ones and a count where a suite holds more than
:data:`LISTED_ENTRIES`).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sparsescope.errors import UnknownNameError, UsageError

SUITE_PREFIX = "suite:"

#: The one form, as help texts and messages write it.
CANONICAL_FORM = "suite:NAME#ENTRY[@SCALE]"

#: An unknown-entry error lists every entry of a suite up to this many; past it, the closest
#: names and the count (the population suites hold hundreds).
LISTED_ENTRIES = 40

FORM_CANONICAL = "suite:"
FORM_BARE = "NAME"
FORM_HASH = "NAME#ENTRY"
FORM_COLON = "NAME:ENTRY"
#: The old forms: read, with a deprecation warning.
DEPRECATED_FORMS = (FORM_HASH, FORM_COLON)


class MatrixNameDeprecation(FutureWarning):
    """An old form of a suite matrix's name was used (a FutureWarning: shown to users)."""


@dataclass(frozen=True)
class SuiteName:
    """A parsed name of one suite's matrices (syntax only: :func:`named_entries` checks that
    the suite and its entries exist)."""

    text: str
    """The name as given."""
    suite: str
    """The suite's name, e.g. ``seed6``."""
    entries: tuple[str, ...] = ()
    """The entries named, in order; empty: every entry."""
    scale: float | None = None
    """The ``@SCALE`` the name carries, or None (the command's ``--scale`` applies)."""
    form: str = FORM_CANONICAL
    """Which form was used: one of ``FORM_*``."""

    @property
    def deprecated(self) -> bool:
        return self.form in DEPRECATED_FORMS

    @property
    def canonical(self) -> str:
        """The same name in the one form, e.g. ``suite:seed6#cant@0.05``."""
        entries = f"#{','.join(self.entries)}" if self.entries else ""
        scale = "" if self.scale is None else f"@{self.scale:g}"
        return f"{SUITE_PREFIX}{self.suite}{entries}{scale}"

    @property
    def suite_arg(self) -> str:
        """``NAME`` or ``NAME#A,B``: what ``api.run``'s ``suite`` and ``suite_entries`` take
        (and a run records as its suite)."""
        return self.suite + (f"#{','.join(self.entries)}" if self.entries else "")


def _split_entries(text: str, spec: str) -> tuple[str, ...]:
    entries = tuple(e.strip() for e in text.split(","))
    if not all(entries):
        raise UsageError(f"{spec}: an empty entry name after '#' (write {CANONICAL_FORM}, "
                         f"entries separated by commas)")
    return entries


def _parse_scale(text: str, spec: str) -> float:
    try:
        scale = float(text)
    except ValueError:
        scale = math.nan
    if not (math.isfinite(scale) and 0 < scale <= 1):
        raise UsageError(f"{spec}: the scale after @ must be a number in (0, 1] (a fraction "
                         f"of the suite), got {text!r}")
    return scale


def _canonical(text: str) -> SuiteName:
    """``suite:NAME[#ENTRIES][@SCALE]`` (or ``@SCALE`` before ``#ENTRIES``)."""
    body = text[len(SUITE_PREFIX):]
    if body.count("#") > 1 or body.count("@") > 1:
        raise UsageError(f"{text}: one #ENTRY list and one @SCALE at most (write "
                         f"{CANONICAL_FORM})")
    name, scale_text, entries_text = body, None, None
    if "@" in body:
        name, _, scale_text = body.partition("@")
        if "#" in scale_text:  # NAME@SCALE#ENTRIES
            scale_text, _, entries_text = scale_text.partition("#")
    if "#" in name:
        name, _, entries_text = name.partition("#")
    if not name:
        raise UsageError(f"{text}: no suite name after '{SUITE_PREFIX}' (write "
                         f"{CANONICAL_FORM}; suites: `sparsescope matrices list`)")
    entries = () if entries_text is None else _split_entries(entries_text, text)
    scale = None if scale_text is None else _parse_scale(scale_text, text)
    return SuiteName(text, name, entries, scale, FORM_CANONICAL)


def parse_matrix_name(text: str, known: Collection[str], *,
                      suite_option: bool = False) -> SuiteName | None:
    """The suite matrices ``text`` names, or None when it names a file (or anything else).

    ``known``: the known suites' names (``matrices.suites.SUITES``). ``suite_option``:
    ``text`` was given to a ``--suite`` option, so a bare ``NAME`` (and ``NAME#ENTRY``) is a
    suite whether or not it is known (an unknown one fails in :func:`check_suite`, naming
    it). Elsewhere the old forms ``NAME#ENTRY`` and
    ``NAME:ENTRY`` are read only when NAME is a known suite and no such file exists. Pure:
    no warning here (:func:`sparsescope.matrices.selection.user_matrix_name` warns)."""
    text = str(text).strip()
    if text.startswith(SUITE_PREFIX):
        return _canonical(text)
    hash_name, hash_sep, hash_rest = text.partition("#")
    colon_name, colon_sep, colon_rest = text.partition(":")
    if suite_option:
        if hash_sep:
            return SuiteName(text, hash_name.strip(), _split_entries(hash_rest, text),
                             None, FORM_HASH)
        if colon_sep and colon_name in known:
            return SuiteName(text, colon_name, _split_entries(colon_rest, text), None,
                             FORM_COLON)
        return SuiteName(text, text, (), None, FORM_BARE)
    if Path(text).exists():
        return None
    if hash_sep and hash_name in known:
        return SuiteName(text, hash_name, _split_entries(hash_rest, text), None, FORM_HASH)
    if colon_sep and colon_name in known:
        return SuiteName(text, colon_name, _split_entries(colon_rest, text), None, FORM_COLON)
    return None


def deprecation_note(name: SuiteName) -> str:
    """The one line an old form gets."""
    return (f"{name.text!r} is an old form of a suite matrix's name ({name.form}); write "
            f"{name.canonical!r} ({CANONICAL_FORM}, the one form every command takes)")


def listed_entries(known: Sequence[str], near: str = "") -> str:
    """A suite's entry names for a message: all of them, sorted, up to
    :data:`LISTED_ENTRIES`; past it the count, the closest to ``near`` and where to see all."""
    if len(known) <= LISTED_ENTRIES:
        return ", ".join(sorted(known))
    close = difflib.get_close_matches(near, known, n=5, cutoff=0.4) if near else []
    return (f"{len(known)} entries ({'closest: ' + ', '.join(close) + '; ' if close else ''}"
            f"every one: `sparsescope matrices list`)")


def _unknown_entry(spec: str, suite: str, entry: str, known: Sequence[str]) -> UnknownNameError:
    """An :class:`UnknownNameError` naming ``spec`` (where it says more than the suite's
    name) and listing the suite's entries (:func:`listed_entries`)."""
    error = UnknownNameError(f"entry of suite {suite!r}", entry, known)
    where = "" if spec == suite else f"{spec}: "
    error.args = (f"{where}unknown entry of suite {suite!r} {entry!r}; known: "
                  f"{listed_entries(known, entry)}",)
    return error


def check_suite(name: SuiteName, suites: Mapping):
    """The ``matrices.suites.Suite`` of ``suites`` (name -> Suite) ``name`` names, each of its
    entries checked: an unknown suite or entry is an :class:`UnknownNameError` naming
    ``name.text``."""
    suite = suites.get(name.suite)
    if suite is None:
        error = UnknownNameError("suite", name.suite, list(suites))
        if name.text != name.suite:  # the text says more than the suite's name
            error.args = (f"{name.text}: {error}",)
        raise error
    known = [e.name for e in suite.entries]
    for entry in name.entries:
        if entry not in known:
            raise _unknown_entry(name.text, name.suite, entry, known)
    return suite


def resolve_scale(name: SuiteName, scale: float | None) -> float | None:
    """The scale to generate ``name`` at: its ``@SCALE``, else the command's ``scale``. A
    command ``scale`` other than 1 (the options' default) beside a different ``@SCALE`` is a
    :class:`UsageError`."""
    if name.scale is None:
        return scale
    if scale is not None and scale != 1.0 and scale != name.scale:
        raise UsageError(f"{name.text}: its @{name.scale:g} and --scale {scale:g} disagree; "
                         f"give the scale once")
    return name.scale
