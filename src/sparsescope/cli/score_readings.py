"""The readings ``sparsescope model score`` prints instead of the score (``--memory-floor``,
``--spmm-bounds``, ``--l1-check``, ``--profile-check``): their options, the rules on what goes
with what, and the one API call each makes (:mod:`sparsescope.analyze.readings`)."""

from __future__ import annotations

import argparse

from sparsescope.errors import UsageError


def add_reading_options(p: argparse.ArgumentParser) -> None:
    """The readings' argument group on the ``model score`` parser."""
    study = p.add_argument_group("readings instead of the score (each prints its own table)")
    study.add_argument("--memory-floor", action="store_true",
                       help="runs of an op with a memory floor (SpMV) against each format's "
                            "floor: the fastest own kernel, auto and the best library, each "
                            "against its format's floor (Markdown)")
    study.add_argument("--spmm-bounds", action="store_true",
                       help="an SpMM run: auto against the best library per (k, layout), and "
                            "every case against the memory bound (issue 18's group)")
    study.add_argument("--newer", action="append", default=[], metavar="RESULTS",
                       help="with --spmm-bounds: a later run whose (matrix, k, layout) triples "
                            "replace the first run's whole (repeatable)")
    study.add_argument("--x-reuse", action="store_true",
                       help="with --spmm-bounds: also the bound with X's capacity misses for "
                            "the large graphs (rebuilds them)")
    study.add_argument("--page", action="store_true",
                       help="with --spmm-bounds: print the memory-bound page (Markdown) "
                            "instead of the summary")
    study.add_argument("--l1-check", action="append", default=[], metavar="PROFILE_DIR",
                       help="the x-gather model's L2 requests against ncu's, with and without "
                            "the L1, for every tile-kernel profile (*_raw.csv.xz or .gz) in the "
                            "folder "
                            "(repeatable; RESULTS not needed)")
    study.add_argument("--profile-check", action="append", default=[], metavar="PROFILE_DIR",
                       help="the time model's counts against ncu's, for every SpMV profile in "
                            "the folder or below (*_raw.csv[.xz|.gz], with the "
                            "*_source.csv[.xz|.gz] "
                            "beside it): warp instructions, DRAM bytes read, blocks, the loops' "
                            "iterations and instructions an iteration, the code outside them; "
                            "a verdict names each count more than 10 %% off and its term. Each "
                            "matrix generated again (seed 0, scale 1; minutes at full scale) "
                            "(repeatable; RESULTS not needed)")


def chosen_reading(args: argparse.Namespace) -> list[str]:
    """The reading flags given (at most one: a :class:`UsageError` for more)."""
    studies = [flag for flag, on in (("--memory-floor", args.memory_floor),
                                     ("--spmm-bounds", args.spmm_bounds),
                                     ("--l1-check", args.l1_check),
                                     ("--profile-check", args.profile_check)) if on]
    if len(studies) > 1:
        raise UsageError(f"{' and '.join(studies)}: one reading at a time")
    return studies


def check_reading_arguments(args: argparse.Namespace, studies: list[str]) -> None:
    """What goes with a reading and what it reads (a :class:`UsageError` otherwise): the SpMM
    bounds' own options, ``--matrix``, RESULTS or profile folders."""
    for flag, on in (("--newer", args.newer), ("--x-reuse", args.x_reuse),
                     ("--page", args.page)):
        if on and not args.spmm_bounds:
            raise UsageError(f"{flag} goes with --spmm-bounds")
    profiles = args.l1_check or args.profile_check
    if args.entries and (args.spmm_bounds or profiles):
        raise UsageError(f"--matrix goes with the score and --memory-floor, not with "
                         f"{studies[0]}")
    if not args.results and not profiles:
        raise UsageError("model score needs RESULTS (results files or folders)")
    if profiles and args.results:
        raise UsageError(f"{studies[0]} reads profile folders, not RESULTS")


def read_reading(args: argparse.Namespace, progress):
    """The reading the arguments ask for (``sparsescope.api.Reading``), or None: the score."""
    from sparsescope import api

    if args.l1_check:
        return api.l1_check_reading(args.l1_check)
    if args.profile_check:
        return api.profile_check_reading(args.profile_check, progress=progress)
    if args.memory_floor:
        return api.memory_floor_reading(args.results, matrices=args.entries,
                                        progress=progress)
    if args.spmm_bounds:
        return api.spmm_bounds_reading(args.results, newer=args.newer, x_reuse=args.x_reuse,
                                       page=args.page)
    return None
