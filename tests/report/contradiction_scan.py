"""Find every achieved "% of X" a rendered report or an ``--json`` output puts above a ceiling
it states, without the cause (issue 34: "an achieved figure above its stated ceiling gets the
named cause, or the ceiling is not shown").

The report's convention (``report.ceiling_causes``): a figure above a ceiling is said with
``because`` in the same sentence, naming the ceiling's figure. The scans:

* :func:`markdown_contradictions` -- a rendered ``report.md`` (or ``analyze`` Markdown):
  1. per table: a row whose achieved ``% of ...`` cell exceeds the ceiling in the same row (a
     ``... ceiling (%)`` column) or in the table's basis (``... ceiling 65.7 %``) must have its
     label in a ``because`` sentence of the table's reading, or ``because`` in the row;
  2. per document: a ceiling of the Little's-law table (``... ceiling (%)`` quantities) that a
     case's ``% of <the same GB/s>`` exceeds must appear, as ``65.7 %``, in a ``because``
     sentence somewhere;
  3. per sentence: ``N % ... above the ... ceiling`` without ``because``;
  4. any achieved ``% of ...`` cell above 100 without a ``because`` in its row or reading;
* :func:`json_contradictions` -- any dict holding an achieved ``..._pct_of_peak`` (or
  ``dram_throughput_pct``) above a ``..._ceiling_pct`` of the same dict, whose text fields
  (``reason``, ``cause``) say no ``because``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_NUM = r"(\d[\d,]*(?:\.\d+)?)"
#: Text within one clause: no sentence end (a decimal point is not one).
_CLAUSE = r"(?:[^.;]|\.(?=\d))*"


def _num(text: str) -> float | None:
    m = re.fullmatch(r"\s*" + _NUM + r"\s*%?\s*", text)
    return float(m.group(1).replace(",", "")) if m else None


def _sentences(text: str) -> list[str]:
    # split on ". " / "; " boundaries, keeping decimals ("65.7 %") whole
    return [s for s in re.split(r"(?<=[.;])\s+(?=[A-Z0-9*(])", text) if s.strip()]


@dataclass
class MdTable:
    title: str
    basis: str = ""
    headers: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    reading: str = ""


def markdown_tables(md: str) -> list[MdTable]:
    """Every numbered table of a rendered report: title, basis, header, rows, reading."""
    tables: list[MdTable] = []
    current: MdTable | None = None
    for line in md.splitlines():
        title = re.match(r"\*\*Table \d+: (.*)\*\*$", line)
        if title:
            current = MdTable(title.group(1))
            tables.append(current)
        elif current is None:
            continue
        elif line.startswith("*") and not line.startswith("**") and not current.headers:
            current.basis = line.strip("*")
        elif line.startswith("| "):
            cells = [c.strip() for c in line.strip()[1:-1].split(" | ")]
            if not current.headers:
                current.headers = cells
            elif not set(line.replace("|", "").strip()) <= set("-: "):
                current.rows.append(cells)
        elif line.startswith("|"):
            continue  # the alignment row
        elif line.startswith("**Reading:**"):
            current.reading = line.removeprefix("**Reading:**").strip()
            current = None
    return tables


def _achieved_columns(headers: list[str]) -> list[int]:
    return [i for i, h in enumerate(headers)
            if re.match(r"(Current )?% of ", h) and "roof" not in h and "ceiling" not in h.lower()]


def _caused(label: str, row: list[str], reading: str) -> bool:
    if any("because" in c for c in row):
        return True
    return any(label in s and "because" in s for s in _sentences(reading))


def markdown_contradictions(md: str) -> list[str]:
    """Every achieved figure above a ceiling the text states, without its cause."""
    found: list[str] = []
    tables = markdown_tables(md)
    for t in tables:
        achieved = _achieved_columns(t.headers)
        if not achieved:
            continue
        ceiling_cols = [i for i, h in enumerate(t.headers)
                        if "ceiling" in h.lower() and h.endswith("(%)")]
        basis_ceilings = [float(m.group(2).replace(",", "")) for m in re.finditer(
            r"([\w'-]+) ceiling " + _NUM + r" %", t.basis)]
        for row in t.rows:
            label = row[0]
            ceilings = [c for c in (_num(row[i]) for i in ceiling_cols) if c is not None]
            for i in achieved:
                value = _num(row[i])
                if value is None:
                    continue
                for ceiling in [*ceilings, *basis_ceilings, 100.0]:
                    if value > ceiling and not _caused(label, row, t.reading):
                        found.append(f"{t.title}: {label} at {value} % above the {ceiling} % "
                                     f"ceiling, no cause")
    found += _document_ceilings(md, tables)
    for sentence in _sentences(md.replace("\n", " ")):
        if (re.search(_NUM + r" %" + _CLAUSE + r"\babove the\b" + _CLAUSE + r"\bceiling",
                      sentence)
                and "because" not in sentence):
            found.append(f"sentence without a cause: {sentence[:160]}")
    return found


def _document_ceilings(md: str, tables: list[MdTable]) -> list[str]:
    """Ceilings of the Little's-law table against every case at the same bandwidth."""
    found = []
    for t in tables:
        if t.headers != ["Quantity", "Value"] or not t.title.startswith("Little's law"):
            continue
        quantities = {q: v for q, v in (r[:2] for r in t.rows)}
        bw = quantities.get("Peak bandwidth (GB/s)")
        for quantity, value in quantities.items():
            ceiling = _num(value)
            if "ceiling" not in quantity.lower() or not quantity.endswith("(%)") or ceiling is None:
                continue
            for other in tables:
                for i in _achieved_columns(other.headers):
                    if bw is None or f"% of {bw} GB/s" not in other.headers[i]:
                        continue
                    worst = max((v for r in other.rows if (v := _num(r[i])) is not None),
                                default=None)
                    stated = f"{ceiling:.1f} %"
                    if worst is not None and worst > ceiling and not any(
                            stated in s and "because" in s
                            for s in _sentences(md.replace("\n", " "))):
                        found.append(f"{quantity} {value}: {other.title} reaches {worst} %, "
                                     f"and no sentence says why")
    return found


_ACHIEVED_KEYS = re.compile(r"(pct_of_peak|dram_throughput_pct)$")


def json_contradictions(value, path: str = "") -> list[str]:
    """Every record of an ``--json`` output with an achieved % of peak above a ceiling % it
    holds (its own numbers, or those of its ``numbers`` / ``inputs``), and no ``because`` in
    its text fields."""
    found = []
    if isinstance(value, dict):
        merged = [k for k in ("numbers", "inputs") if isinstance(value.get(k), dict)]
        scope = [value, *(value[k] for k in merged)]
        nums = {k: v for d in scope for k, v in d.items()
                if isinstance(v, int | float) and not isinstance(v, bool)}
        text = " ".join(v for d in scope for v in d.values() if isinstance(v, str))
        for a, av in nums.items():
            if not _ACHIEVED_KEYS.search(a):
                continue
            for c, cv in nums.items():
                if c.endswith("ceiling_pct") and av > cv and "because" not in text:
                    found.append(f"{path}: {a} {av} above {c} {cv}, no cause")
        for k, v in value.items():
            if k not in merged:
                found += json_contradictions(v, f"{path}/{k}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += json_contradictions(item, f"{path}[{i}]")
    return found
