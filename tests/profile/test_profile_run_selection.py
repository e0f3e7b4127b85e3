"""``sparsescope profile run`` with the fake ncu: the launches and groups it hands ncu, what it
records of them, and the derived filter dropped when it matches nothing."""

from __future__ import annotations

import json

import pytest

from sparsescope.cli import main
from sparsescope.profile import metrics as M
from sparsescope.profile.kernel_selection import names_filter, own_kernel_names

MODULES = ["sparsescope.cli.profile_cmd"]
CASE = ["profile", "run", "--suite", "seed6", "--matrix", "cant"]


def _profile_calls(fake_ncu) -> list[list[str]]:
    """The argv of each profiling run ncu was given (not the exports or the version query)."""
    return [c.split() for c in fake_ncu.calls() if c.startswith("--export ")]


def _after(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_default_run_profiles_our_kernels_of_the_checked_call(fake_ncu, tmp_path, capsys):
    rc = main([*CASE, "--backend", "cuda-spmv-auto", "--out", str(tmp_path), "--json"],
              modules=MODULES)
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    [argv] = _profile_calls(fake_ncu)
    assert _after(argv, "--kernel-name") == names_filter(own_kernel_names())
    assert _after(argv, "--kernel-name-base") == "function"
    assert _after(argv, "--profile-from-start") == "off"
    assert argv[-2:] == ["--check-only", "--profile-call"]
    assert out["kernel_selection"] == {
        "kernel_filter": names_filter(own_kernel_names()), "name_base": "function",
        "one_call": True, "origin": "own kernels",
        "what": f"our kernels ({len(own_kernel_names())} in backends/kernels/*.cu)",
        "widened": "", "text": out["kernel_selection"]["text"]}
    assert out["collected"] == {"set": None, "groups": list(M.DEFAULT_GROUPS),
                                "sections": ["LaunchStats", "Occupancy", "WarpStateStats",
                                             "SchedulerStats", "SourceCounters"]}
    assert _after(argv, "--metrics").split(",") == list(M.group_metrics(M.DEFAULT_GROUPS)[0])


def test_the_text_says_what_was_profiled_and_collected(fake_ncu, tmp_path, capsys):
    rc = main([*CASE, "--backend", "cupy-cusparse-i32", "--groups", "stalls,memory-tables",
               "--out", str(tmp_path)], modules=MODULES)
    assert rc == 0
    lines = capsys.readouterr().out.splitlines()
    assert ("kernels profiled: cuSPARSE's kernels (namespace cusparse::; no format conversion, "
            "fill or copy) of the checked call [ncu --kernel-name-base demangled --kernel-name "
            "regex:.*cusparse::.*, --profile-from-start off]") in lines
    assert ("collected: groups stalls, memory-tables (sections: WarpStateStats, "
            "SchedulerStats, MemoryWorkloadAnalysis_Tables)") in lines
    [argv] = _profile_calls(fake_ncu)
    assert [argv[i + 1] for i, p in enumerate(argv) if p == "--section"] == [
        "WarpStateStats", "SchedulerStats", "MemoryWorkloadAnalysis_Tables"]


def test_a_derived_filter_that_matches_nothing_is_dropped_and_recorded(fake_ncu, tmp_path,
                                                                      capsys):
    fake_ncu.mode("filtermiss")
    rc = main([*CASE, "--backend", "cupy-cusparse-i32", "--out", str(tmp_path), "--json"],
              modules=MODULES)
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    first, second = _profile_calls(fake_ncu)
    assert _after(first, "--kernel-name") == "regex:.*cusparse::.*"
    assert "--kernel-name" not in second
    assert _after(second, "--profile-from-start") == "off"     # still the checked call alone
    assert out["kernel_selection"]["kernel_filter"] is None
    assert out["kernel_selection"]["one_call"] is True
    assert out["kernel_selection"]["widened"] == (
        "regex:.*cusparse::.* matched none of the launches ncu saw: csr_partition_kernel, "
        "csrmv_v3_kernel")
    assert out["command"][1:] == second                       # the run that was read


def test_the_users_filter_that_matches_nothing_stays_an_error(fake_ncu, tmp_path, capsys):
    fake_ncu.mode("filtermiss")
    rc = main([*CASE, "--backend", "cupy-cusparse-i32", "--kernel", "spmv_nope",
               "--out", str(tmp_path)], modules=MODULES)
    assert rc == 8
    assert "no kernel launch matched the filter 'spmv_nope'" in capsys.readouterr().err
    assert len(_profile_calls(fake_ncu)) == 1                       # not run again


def test_a_program_that_launched_nothing_is_not_run_again(fake_ncu, tmp_path, capsys):
    fake_ncu.mode("nokernels-bare")
    rc = main([*CASE, "--backend", "cuda-spmv-sell", "--out", str(tmp_path)], modules=MODULES)
    assert rc == 8
    assert "kernels the program launched" not in capsys.readouterr().err
    assert len(_profile_calls(fake_ncu)) == 1


@pytest.mark.parametrize("options, present, absent", [
    (["--whole-program"], [], ["--profile-from-start", "--profile-call"]),
    (["--kernel", "regex:spmv_", "--kernel-name-base", "demangled"],
     ["--profile-from-start", "--profile-call"], []),
])
def test_scope_and_filter_options(fake_ncu, tmp_path, capsys, options, present, absent):
    rc = main([*CASE, "--backend", "cuda-spmv-sell", *options, "--out", str(tmp_path)],
              modules=MODULES)
    assert rc == 0
    [argv] = _profile_calls(fake_ncu)
    for flag in present:
        assert flag in argv
    for flag in absent:
        assert flag not in argv
    if "--kernel" in options:
        assert _after(argv, "--kernel-name") == "regex:spmv_"
        assert _after(argv, "--kernel-name-base") == "demangled"
    else:                                           # our names still filter the whole program
        assert _after(argv, "--kernel-name") == names_filter(own_kernel_names())
