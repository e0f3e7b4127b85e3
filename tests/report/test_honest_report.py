"""A report that knows what machine it ran on and never contradicts itself (issue 34, points
1, 2 and 8): rendered CPU reports, a committed H200 run re-rendered, and ``analyze
--from-profile`` (text and ``--json``) are scanned for an internal identifier left for the
reader to decode (:func:`sparsescope.report.labels.leftover_identifiers`) and for an achieved
figure above a ceiling they state without its cause (``contradiction_scan``)."""

from __future__ import annotations

import dataclasses

import pytest
from contradiction_scan import json_contradictions, markdown_contradictions
from report_builders import make_cpu_runset, samples_around

from sparsescope.report import spmv_layout
from sparsescope.report.labels import label, leftover_identifiers
from sparsescope.report.write import write_report
from sparsescope.results.io import read_runset

SEED6 = "results/h200/seed6/results.json"


def _markdown(runset, out, monkeypatch, **kw) -> str:
    """``runset``'s report.md, its figures left out (the text is what is scanned)."""
    monkeypatch.setattr(spmv_layout, "FIGURE_FUNCS", {})
    return write_report(runset, out, progress=False, **kw).markdown.read_text()


def _faster_than_memory(rs):
    """band-small at 0.1 ms: 1,840,004 B / 0.1 ms = 18.4 GB/s, 147 % of the 12.5 GB/s copy."""
    cases = tuple(dataclasses.replace(c, model=None, measurement=dataclasses.replace(
        c.measurement, samples_ms=samples_around(0.1, 10))) if c.matrix == "band-small" else c
        for c in rs.cases)
    return dataclasses.replace(rs, cases=cases)


@pytest.fixture(scope="module")
def seed6_md(committed, tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        return _markdown(read_runset(committed(SEED6)), tmp_path_factory.mktemp("seed6"), mp)


# --- the scanners catch what they look for --------------------------------------------------

def test_leftover_identifiers_are_snake_case_outside_code_and_paths():
    text = ("Limited by mlp_gain. `copy_bw_gb_s` is code, tables/kernel_breakdown_all.json a "
            "path, cusparse::csrmv_v3_kernel a C++ name, cuda-csr-vector a backend.\n```\n"
            "y_read\n```\n![a_b](figures/dae_speedup.png)")
    assert leftover_identifiers(text) == ["mlp_gain"]
    assert label("mlp_gain") == "doubled memory-level parallelism (2x)"
    assert label("some_new_key") == "some new key"


def test_contradiction_scan_catches_a_ceiling_exceeded_without_cause():
    md = ("**Table 1: DAE**\n\n*H200. Little's-law ceiling 65.7 %.*\n\n"
          "| Case | Current % of peak |\n|---|---:|\n| ldoor | 66.3 |\n\n"
          "**Reading:** ldoor gains nothing.\n")
    assert markdown_contradictions(md) == [
        "DAE: ldoor at 66.3 % above the 65.7 % ceiling, no cause"]
    fixed = md.replace("gains nothing.", "gains nothing: 66.3 % is above the 65.7 % "
                                         "Little's-law ceiling because it keeps 1.01 lines.")
    assert markdown_contradictions(fixed) == []
    assert markdown_contradictions("It reads 29.5 %, above the 17.0 % ceiling. Fine.") == [
        "sentence without a cause: It reads 29.5 %, above the 17.0 % ceiling."]
    bare = {"bottlenecks": [{"reason": "L1 at 69.8 %", "numbers": {
        "bw_pct_of_peak": 29.46, "littles_law_ceiling_pct": 17.02}}]}
    assert json_contradictions(bare) == [
        "/bottlenecks[0]: bw_pct_of_peak 29.46 above littles_law_ceiling_pct 17.02, no cause"]
    bare["bottlenecks"][0]["reason"] += "; above it because 1.73 lines per warp"
    assert json_contradictions(bare) == []


# --- a CPU run ------------------------------------------------------------------------------

def test_cpu_report_without_a_gpu_named_says_why_in_one_line(tmp_path, monkeypatch):
    md = _markdown(make_cpu_runset(reference_gpu=""), tmp_path, monkeypatch)
    # no GPU model fed with CPU numbers: no DAE table, no Little's law, no H200 anywhere
    for gone in ("DAE what-if per case", "Little's law: ", "Gap decomposition**",
                 "reference GPU", "Limited by", "what-if from the CPU"):
        assert gone not in md, gone
    section = md[md.index("## 7. Little's law"):md.index("## 8.")]
    assert section.count("*Not computed: warps do not describe the CPU") == 1
    assert "`--reference-gpu NAME`" in section
    assert leftover_identifiers(md) == [] and markdown_contradictions(md) == []


def test_cpu_report_for_a_named_gpu_uses_its_spec_alone(tmp_path, monkeypatch):
    md = _markdown(make_cpu_runset(), tmp_path, monkeypatch, reference_gpu="B200")
    assert "**Table" in md and "Little's law: B200" in md and "DAE FIFO SRAM cost: B200" in md
    assert "Reference GPU B200, from its spec alone" in md
    assert "DRAM latency 200 ns, datasheet estimate" in md
    assert "DAE what-if per case" not in md and "Current % of peak | DAE speedup" in md
    assert leftover_identifiers(md) == [] and markdown_contradictions(md) == []


def test_cpu_device_table_labels_each_figure(tmp_path, monkeypatch):
    md = _markdown(make_cpu_runset(reference_gpu=""), tmp_path, monkeypatch)
    assert "| Quantity | Unit | Stated (not measured) | Stated by | Measured | Source |" in md
    # the CPU's bandwidth is measured: shown as measured, never as a datasheet figure
    assert "| Peak bandwidth | GB/s | — | — | 12.5 |" in md
    assert "| Logical cores |  | 2 | OS |" in md


def test_cpu_case_above_its_peak_names_the_cause(tmp_path, monkeypatch):
    md = _markdown(_faster_than_memory(make_cpu_runset(reference_gpu="")), tmp_path,
                   monkeypatch)
    assert "| band-small |" in md and "| 147.2 |" in md
    assert ("**Above the ceiling:** band-small reads 147.2 % of the 12.5 GB/s peak (measured "
            "copy bandwidth of the CPU) because") in md
    assert markdown_contradictions(md) == []


# --- a committed GPU run, re-rendered -------------------------------------------------------

def test_committed_h200_report_has_no_leftover_identifier(seed6_md):
    assert leftover_identifiers(seed6_md) == []
    assert "| doubled memory-level parallelism (2x) |" in seed6_md  # the DAE "Limited by"
    assert "| ceiling method: copy bandwidth |" in seed6_md
    assert "| torch-cusparse-i64 | `cusparse::csrmv_v3_kernel` |" in seed6_md


def test_committed_h200_report_names_why_a_case_beats_its_ceiling(seed6_md):
    assert markdown_contradictions(seed6_md) == []
    # ldoor [cuda-csr-vector]: 66.3 % against the 65.7 % ceiling at the measured 343 ns
    assert ("66.3 % is above the 65.7 % Little's-law ceiling because that ceiling counts one "
            "128-byte line in flight per resident warp at 343 ns, and 66.3 % takes at least "
            "1.01 lines per warp") in seed6_md
    assert "effective latency is at most" not in seed6_md  # 340 ns against the 343 ns used


def test_committed_h200_report_names_each_byte_model(seed6_md):
    assert ("Byte model: CSR at INT64 and at INT32, y read + written (seed 000, section 9.3), "
            "per matrix") in seed6_md
    # webbase-1M: the timing table's own bytes write y only (csr-scalar), 40.844 MB here
    assert ("webbase-1M [cuda-csr-scalar]: 36.844 MB there, 40.844 MB here (AI 0.169 there)"
            in seed6_md)
    assert seed6_md.count("Byte model: each case's own bytes") == 3  # timing, floor, roofline
