"""Numbers and units as ncu's CSV exports print them, brought to the base units of a report.

The CSV pages print ``1,305`` (thousands separators) and, unless exported with
``--print-units base``, scale units for reading (``27.84 us``, ``49.12 Mbyte``, ``1.84 Tbyte/s``,
``56.3 sector/ns``). ``ncu_report`` always gives base units (``ns``, ``byte``, ``hz``, ``/s``), so
the CSV reader converts every value back to those: prefixes are decimal (ncu's SI mode, the
default).
"""

from __future__ import annotations

import math

#: Decimal prefixes ncu uses when it scales a unit.
PREFIXES = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
#: Base units ncu scales with a prefix (``Kbyte``, ``Ghz``, ``Minst``, ...).
SCALABLE = frozenset({"byte", "hz", "inst", "sector", "sectors", "cycle", "warp", "thread",
                      "request", "block", "sample", "register"})
#: Time units in nanoseconds; a report's durations are in ns, its rates per second.
TIME_NS = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6,
           "s": 1e9, "second": 1e9}


def parse_number(text: str) -> float | None:
    """``"1,305"`` -> 1305.0, ``"6,138.67"`` -> 6138.67, ``"nan"`` -> nan; None if not a number."""
    cleaned = text.strip().replace(",", "")
    if not cleaned:
        return None
    try:
        return float(cleaned)
    except ValueError:
        return None


def _scale_term(term: str) -> tuple[float, str]:
    """(factor to base, base unit) of one side of a unit, time excluded."""
    if len(term) > 1 and term[0] in PREFIXES and term[1:] in SCALABLE:
        return PREFIXES[term[0]], term[1:]
    return 1.0, term


def to_base_unit(value: float, unit: str) -> tuple[float, str]:
    """Convert ``value unit`` to the unit a report stores.

    ``27.84 us`` -> ``27840 ns``; ``49.12 Mbyte`` -> ``4.912e7 byte``;
    ``1.84 Tbyte/s`` -> ``1.84e12 byte/s``; ``56.3 sector/ns`` -> ``5.63e10 sector/s``.
    """
    if not unit or math.isnan(value):
        return value, unit
    numerator, slash, denominator = unit.partition("/")
    if numerator in TIME_NS:
        value, numerator = value * TIME_NS[numerator], "ns"
    else:
        factor, numerator = _scale_term(numerator)
        value *= factor
    if slash:
        if denominator in TIME_NS:  # a rate: per ns -> per s multiplies by 1e9
            value, denominator = value * 1e9 / TIME_NS[denominator], "s"
        else:
            factor, denominator = _scale_term(denominator)
            value /= factor
        return value, f"{numerator}/{denominator}"
    return value, numerator
