"""Errors a user can act on.

Every error sparsescope raises for bad input derives from :class:`SparsescopeError`; the CLI
prints its message (no traceback) and exits with :attr:`SparsescopeError.exit_code`.
"""

from __future__ import annotations


class SparsescopeError(Exception):
    """Base class: a message a user can act on, and the CLI exit code."""

    exit_code = 1


class UsageError(SparsescopeError):
    """A command-line argument or API parameter is invalid."""

    exit_code = 2


class MatrixFormatError(SparsescopeError):
    """A matrix file is malformed. The message names the file and the line or index.

    Attributes:
        path: the file being read.
        line: 1-based line number of the defect, when it is known.
        index: 0-based entry index of the defect, when a line number does not apply.
    """

    exit_code = 3

    def __init__(self, path: str, message: str, *, line: int | None = None,
                 index: int | None = None) -> None:
        self.path = str(path)
        self.line = line
        self.index = index
        where = self.path
        if line is not None:
            where += f", line {line}"
        elif index is not None:
            where += f", entry {index}"
        super().__init__(f"{where}: {message}")


class MatrixNotAvailableError(SparsescopeError):
    """A named matrix is neither in the cache nor downloadable (no network)."""

    exit_code = 4


class ResultsFormatError(SparsescopeError):
    """A results file does not match the schema it claims."""

    exit_code = 5


class MissingDependencyError(SparsescopeError):
    """An optional dependency is not installed; the message names the extra to install."""

    exit_code = 6


class DeviceError(SparsescopeError):
    """No usable device, or the device failed while running a case."""

    exit_code = 7


class UnknownNameError(UsageError):
    """A name (GPU, suite, backend, generator) is not in its table; lists the known names."""

    def __init__(self, kind: str, name: str, known: list[str] | tuple[str, ...]) -> None:
        self.kind = kind
        self.name = name
        self.known = list(known)
        super().__init__(f"unknown {kind} {name!r}; known: {', '.join(sorted(self.known))}")


class MatrixTooLargeError(MatrixFormatError):
    """A matrix file declares sizes this machine cannot hold; refused before anything is allocated.

    The message says what the file declares and how many bytes reading it would need.

    Attributes:
        needed_bytes: bytes the declared sizes need (0 when only an allocation failure is known).
        memory_bytes: physical memory of this machine, when the platform reports it.
    """

    def __init__(self, path: str, message: str, *, line: int | None = None,
                 needed_bytes: int = 0, memory_bytes: int | None = None) -> None:
        self.needed_bytes = needed_bytes
        self.memory_bytes = memory_bytes
        super().__init__(path, message, line=line)


class TruncatedInputError(SparsescopeError):
    """An input file stops part-way through a record (a SASS listing cut inside a kernel).

    What followed the cut is unknown, so the file is refused rather than analysed in part. The
    message names the file, the line where it stops and the record cut short. Exit code 1: the
    generic input-error code.

    Attributes:
        path: the file (or stream) being read.
        line: 1-based line number where the record stops, when it is known.
        item: the record cut short (a kernel name).
    """

    exit_code = 1

    def __init__(self, path: str, message: str, *, line: int | None = None,
                 item: str | None = None) -> None:
        self.path = str(path)
        self.line = line
        self.item = item
        where = self.path if line is None else f"{self.path}, line {line}"
        super().__init__(f"{where}: {message}")


class OutputError(SparsescopeError):
    """A file or folder the command would write cannot be written (a file where a folder is
    wanted, no permission, a read-only file system, an unusable store). Raised before any case
    is measured; the message names the path and the fix."""

    exit_code = 9


class StoreWriteError(SparsescopeError):
    """The results and report were written, but appending them to the results store failed:
    the message says where the results are safe."""

    exit_code = 10


class Interrupted(SparsescopeError):
    """Ctrl-C (SIGINT) stopped the command cleanly; the message says what was kept (a sweep's
    cases are in the store: the same command resumes)."""

    exit_code = 130


#: Exit code of a command whose run finished but had a case failing its correctness check
#: (or, with ``--strict``, a skipped case). Results and report are written all the same.
EXIT_CASES_FAILED = 11

#: Exit code of a sweep stopped by its ``--time-limit`` with cases left: the results and
#: reports hold what was done; run the same command again to resume.
EXIT_SWEEP_INCOMPLETE = 12

#: Exit code of a sweep ended because its cluster had no live worker left: the cases in
#: flight are stored as failed (``--retry-failed`` runs them again), the rest are left.
EXIT_SWEEP_ABORTED = 13

#: Exit code of a sweep stopped by SIGTERM (what a batch scheduler sends before it kills a
#: job): 128 + SIGTERM, as a shell reports it. What finished is stored and in results.json.
EXIT_TERMINATED = 143

#: Exit code of a command whose reader of stdout went away (``sparsescope ... | head``):
#: 128 + SIGPIPE, as a shell reports a command killed by it. The command ends quietly.
EXIT_BROKEN_PIPE = 141

#: Every exit code of the ``sparsescope`` command and what it means, in order: the one table
#: ``sparsescope --help`` prints and the README's "Exit codes" paragraph follows
#: (``tests/test_readme.py`` and ``tests/cli/test_help_epilog.py`` hold both to it, and it
#: to every code set anywhere in the source).
EXIT_CODES: dict[int, str] = {
    0: "ok (every case ok or skipped)",
    SparsescopeError.exit_code: "generic input error (e.g. a SASS listing cut short)",
    UsageError.exit_code: "usage (a bad argument, an unknown name)",
    MatrixFormatError.exit_code: "matrix format (the message names the file and line)",
    MatrixNotAvailableError.exit_code: "matrix not available (no such file; not cached and "
                                       "no network)",
    ResultsFormatError.exit_code: "results format",
    MissingDependencyError.exit_code: "missing dependency (the message names the pip extra)",
    DeviceError.exit_code: "device (no usable GPU, or it failed)",
    # 8: profile.errors.ProfileError and _tools' tool error, in modules above this one
    8: "profile (Nsight Compute or a CUDA tool failed, or a profile does not parse)",
    OutputError.exit_code: "an output path or the store cannot be written (checked before "
                           "measuring)",
    StoreWriteError.exit_code: "the store failed after the results were written (they are "
                               "safe)",
    EXIT_CASES_FAILED: "a case failed its correctness check (with --strict, a skipped case "
                       "too)",
    EXIT_SWEEP_INCOMPLETE: "sweep: --time-limit reached with cases left (run it again to "
                           "resume)",
    EXIT_SWEEP_ABORTED: "sweep: the cluster had no live worker left",
    Interrupted.exit_code: "interrupted (Ctrl-C)",
    EXIT_BROKEN_PIPE: "the reader of stdout went away (| head)",
    EXIT_TERMINATED: "sweep: terminated by SIGTERM (what finished is stored)",
}
