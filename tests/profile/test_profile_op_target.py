"""What ``sparsescope profile --op spmm|slice`` hands ncu is a command line of
``backends.op_runner``'s target program: its parser accepts it, and the program, run in-process
on the CPU backends, checks the case once without timing it (the profiled program's job)."""

from __future__ import annotations

import sys

import pytest

from sparsescope.backends import op_runner
from sparsescope.ops.registry import get_op
from sparsescope.profile.collect import OP_TARGET_MODULE, target_command


def _target_args(command: list[str]) -> list[str]:
    assert command[:3] == [sys.executable, "-m", OP_TARGET_MODULE]
    return command[3:]


@pytest.mark.parametrize("op, backend, params, expected", [
    ("spmm", "spmm-cuda-rowwarp", {"k": 64, "layout": "col"}, {"k": 64, "layout": "col"}),
    ("spmm", "spmm-torch-i64", None, {"k": 8, "layout": "row"}),
    ("slice", "slice-cuda-gather", {"rows_selected": 5000, "weights": "scalar"},
     {"rows_selected": 5000, "rows": None, "weights": "scalar", "out_of_range": "error"}),
    ("slice", "slice-torch", {"rows": (7, 0, 7), "out_of_range": "zero"},
     {"rows_selected": 64, "rows": (7, 0, 7), "weights": "per-nnz", "out_of_range": "zero"}),
])
def test_op_runner_parses_what_profile_passes(op, backend, params, expected):
    command = target_command("dlmc3", "dlmc-512x1024", backend, op=op, scale=0.25,
                             params=params)
    args = op_runner.build_parser().parse_args(_target_args(command))
    assert (args.op, args.suite, args.matrix, args.backend) == (
        op, "dlmc3", "dlmc-512x1024", backend)
    assert args.scale == 0.25 and args.seed == 0
    assert args.check_only is True                     # one checked call, no timing protocol
    # the parameters reach the op as the values profile resolved, defaults included
    assert get_op(op).resolve_params(op_runner._params(args.param)) == expected


@pytest.mark.parametrize("op, suite, matrix, backend, params, line", [
    ("spmm", "dlmc3", "dlmc-128x256", "spmm-scipy-cpu", {"k": 4, "layout": "col"},
     "sparsescope-op-target: dlmc-128x256 spmm-scipy-cpu spmm: ok (checked only, not timed)"),
    ("slice", "slice003", "slice-1000", "slice-scipy-cpu", {"rows_selected": 16},
     "sparsescope-op-target: slice-1000 slice-scipy-cpu slice: ok (checked only, not timed)"),
])
def test_op_runner_runs_the_profiled_case_once(op, suite, matrix, backend, params, line,
                                                capsys):
    command = target_command(suite, matrix, backend, op=op, scale=0.1, params=params)
    assert op_runner.main(_target_args(command)) == 0
    assert capsys.readouterr().out.strip() == line


def test_op_runner_exit_code_for_a_bad_parameter(capsys):
    # a value the op refuses (an index outside the 100-row matrix) exits 2 with the reason
    command = target_command("slice003", "slice-1000", "slice-scipy-cpu", op="slice",
                             scale=0.1, params={"rows": (3, 100)})
    assert op_runner.main(_target_args(command)) == 2
    err = capsys.readouterr().err
    assert err.startswith("sparsescope-op-target: error: row index 100 at position 1 is out "
                          "of range for a matrix with 100 rows (valid: 0 to 99)")


def test_the_target_program_runs_as_ncu_starts_it(tmp_path):
    """As a separate ``python -m`` process (what ncu runs), not in-process: the module then
    runs as ``__main__``, and its backends' OpBackend class must still be recognised."""
    import os
    import subprocess
    from pathlib import Path

    command = target_command("dlmc3", "dlmc-128x256", "spmm-scipy-cpu", op="spmm",
                             params={"k": 4})
    src = Path(op_runner.__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "dlmc-128x256 spmm-scipy-cpu spmm: ok" in done.stdout + done.stderr
