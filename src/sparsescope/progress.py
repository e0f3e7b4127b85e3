"""One progress bar over every case of a run, on stderr.

Shown only when stderr is a terminal and the command prints text (``--json`` turns it off), so
piped output and machine output stay clean. It appears at once (before the device's ceilings are
measured), counts cases, names the one that just finished and estimates the time left.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any


def quiet_tqdm():
    """The ``tqdm`` class with its monitor thread off: every bar of the tool comes from here,
    because a report's figure workers fork only from a one-thread process
    (``report.figure_pool.can_fork``), and the monitor is one more thread (it only retunes
    ``miniters`` of bars that update rarely)."""
    from tqdm import tqdm

    tqdm.monitor_interval = 0
    return tqdm


class CaseProgress:
    """``with CaseProgress(total, enabled) as bar: ... bar.wrap(on_case)``."""

    def __init__(self, total: int, enabled: bool = True) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.total = total
        self._bar: Any = None

    def __enter__(self) -> CaseProgress:
        if self.enabled:
            self._bar = quiet_tqdm()(total=self.total, desc="cases", unit="case", file=sys.stderr,
                             dynamic_ncols=True, leave=False, mininterval=0.2)
            self._bar.refresh()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def note(self, text: str) -> None:
        """What is happening now, shown beside the count (e.g. measuring the ceilings)."""
        if self._bar is not None:
            self._bar.set_postfix_str(text, refresh=True)

    def advance(self, label: str) -> None:
        """One case done that ran no code here (e.g. found in the store)."""
        if self._bar is not None:
            self._bar.update(1)
            self._bar.set_postfix_str(label, refresh=False)

    def wrap(self, on_case: Callable[[Any], None] | None) -> Callable[[Any], None]:
        """``on_case`` that also advances the bar; the bar's own lines stay clear of it."""
        def finished(case: Any) -> None:
            self.advance(f"{case.matrix} {case.backend}")
            if on_case is not None:
                if self._bar is not None:
                    with self._bar.external_write_mode():
                        on_case(case)
                else:
                    on_case(case)
        return finished


class Status:
    """A long step of unknown length (ncu, ceilings, an analysis): one line on stderr when it
    starts and its time when it ends, shown only on a terminal and never under ``--json``."""

    def __init__(self, text: str, enabled: bool = True) -> None:
        self.text = text
        self.enabled = enabled and sys.stderr.isatty()
        self._start = 0.0

    def __enter__(self) -> Status:
        import time

        self._start = time.perf_counter()
        if self.enabled:
            print(f"sparsescope: {self.text} ...", file=sys.stderr, flush=True)
        return self

    def __exit__(self, *exc: object) -> None:
        import time

        if self.enabled:
            took = time.perf_counter() - self._start
            print(f"sparsescope: {self.text}: {'stopped' if exc[0] else 'done'} after "
                  f"{took:.1f} s", file=sys.stderr, flush=True)
