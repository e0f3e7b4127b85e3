"""A busy SM is "compute-bound" only when it does floating-point work: a kernel at 70 % issue
with 0.9 % of the FP32 peak is issue-bound (addressing, decoding, loads), and says so."""

from sparsescope.analyze.bound import FLOP_SHARE_PCT, _compute_reason


def test_low_flops_is_issue_bound_and_says_why():
    text = _compute_reason(70.0, 0.9, 5.2)
    assert "instruction issue at 70.0 % of peak" in text
    assert "FP32 work is 0.9 % of its peak" in text and "DRAM at 5.2 %" in text
    assert "not floating-point math" in text


def test_real_flops_stay_compute():
    text = _compute_reason(75.0, FLOP_SHARE_PCT + 30, 3.0)
    assert text == "SM/issue at 75.0 % of peak (>= 60 %) with DRAM at 3.0 %"
    assert _compute_reason(75.0, None, None).startswith("SM/issue at 75.0 %")


def test_bottleneck_numbers_read_as_words_with_units():
    from sparsescope.report.analyze_render import _value, number_label

    assert number_label("bw_pct_of_peak") == "DRAM (% of peak)"
    assert number_label("achieved_bw_gb_s") == "achieved (GB/s)"
    assert number_label("excess_sectors") == "excess sectors"
    assert _value(True) == "yes" and _value(False) == "no" and _value(0.5) == "0.5"
