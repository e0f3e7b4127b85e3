"""A finding's source line is quoted only from the file its SASS line info names, and only when
that file has the line: a line past the end of the kernel's .cu (planted with ``#line``) is
named, not quoted; a function inlined from a header is quoted from the header."""

from __future__ import annotations

import pytest

from sparsescope._tools import find_tool
from sparsescope.analyze.records import Location, from_jsonable
from sparsescope.analyze.source_lines import quote_location, source_line

HEADER = """// helper.cuh
#pragma once
__device__ __forceinline__ float twice(const float* a, int i) {
    return 2.0f * a[i];
}
"""
#: 7 lines; the second load and the store claim line 400 of this file.
KERNEL = """#include "helper.cuh"
extern "C" __global__ void planted_line(const float* a, const float* b, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
#line 400
    y[i] = twice(a, i) + b[i];
}
"""


def test_lines_are_counted_as_the_compiler_counts_them(tmp_path):
    unix, dos, open_end = tmp_path / "unix.cu", tmp_path / "dos.cu", tmp_path / "open.cu"
    unix.write_bytes(b"int a;\n\n  x[i] = 1;  \n")  # 3 lines, the final newline ends line 3
    dos.write_bytes(b"a\r\nb\r\n")
    open_end.write_bytes(b"a\nb")  # no final newline: still 2 lines
    cache: dict = {}
    assert source_line(str(unix), 3, cache) == ("x[i] = 1;", "")
    assert source_line(str(unix), 2, cache) == ("", "")  # a blank line exists
    assert source_line(str(unix), 4, cache) == (None, "the file has 3 lines")
    assert source_line(str(dos), 2) == ("b", "")
    assert source_line(str(dos), 3) == (None, "the file has 2 lines")
    assert source_line(str(open_end), 2) == ("b", "")
    assert source_line(str(tmp_path / "gone.cuh"), 1) == (
        None, "the file is not found where the analysis ran")
    assert source_line("", 12) == (None, "the line info names no file")
    unix.write_text("changed\n")  # the cache keeps what was read first
    assert source_line(str(unix), 3, cache) == ("x[i] = 1;", "")


def test_a_location_recorded_before_files_were_kept_is_named_not_quoted():
    # analysis.json written before Location had source_file: it still reads, and quoting it
    # says why there is no quote instead of guessing the file
    old = from_jsonable(Location, {"kernel": "k", "address": 240, "sass": "LDG.E R5, [R4]",
                                   "source_line": 51, "detail": "const pointer, plain LDG"})
    assert (old.source_file, old.source_text, old.source_note) == ("", None, "")
    quoted = quote_location(old)
    assert (quoted.source_text, quoted.source_note) == (None, "the line info names no file")
    assert quote_location(Location("k", 0, "EXIT")) == Location("k", 0, "EXIT")


@pytest.mark.skipif(find_tool("nvcc") is None or find_tool("nvdisasm") is None,
                    reason="nvcc and nvdisasm (line info) compile and read the planted kernel")
def test_a_line_past_the_end_of_the_cu_is_named_and_a_header_line_quoted(tmp_path):
    from sparsescope.analyze.api import analysis_from_dict, analysis_to_dict, analyze_evidence
    from sparsescope.analyze.sources import evidence_from_sass
    from sparsescope.report.analyze_render import render_analysis
    from sparsescope.sass.analysis import analyse_source

    (tmp_path / "helper.cuh").write_text(HEADER)
    src = tmp_path / "planted_line.cu"
    src.write_text(KERNEL)
    analyses = analyse_source(src, arch="sm_90", out_dir=tmp_path)
    result = analyze_evidence(evidence_from_sass(analyses, workload="planted_line",
                                                 block_threads=256))
    finding = next(f for f in result.findings if f.rule == "missing_read_only")
    by_file = {loc.source_file: loc for loc in finding.locations}
    assert sorted(by_file) == [str(tmp_path / "helper.cuh"), str(src)]
    inlined, planted = by_file[str(tmp_path / "helper.cuh")], by_file[str(src)]
    assert (inlined.source_line, inlined.source_text, inlined.source_note) == (
        4, "return 2.0f * a[i];", "")
    assert (planted.source_line, planted.source_text, planted.source_note) == (
        400, None, "the file has 7 lines")
    md = render_analysis(result)
    assert "| address | line | instruction | detail | source |" in md
    assert (f"| 0x{inlined.address:04x} | helper.cuh:4 | `{inlined.sass}` | const pointer, "
            f"plain LDG | `return 2.0f * a[i];` |") in md
    assert (f"| 0x{planted.address:04x} | planted_line.cu:400 | `{planted.sass}` | const "
            f"pointer, plain LDG | not quoted: `{src}` line 400; the file has 7 lines |") in md
    # the quotes travel with analysis.json: a later render shows the same, files or not
    assert analysis_from_dict(analysis_to_dict(result)).findings == result.findings
