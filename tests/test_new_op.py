"""Adding an op is small: this module alone defines SpMV with the transposed matrix
(``y = A^T x``), one parameter, one backend and one report section, registers them in the
registry table at run time, and runs them end to end through ``sparsescope.api.run`` and the
command line -- no file of the package is touched: the parameter's ``ParamSpec`` is its
``--x-scale`` option, and the results file reads back with the op's typed parameters."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope import api, registry
from sparsescope.backends.base import Capability, OpBackend
from sparsescope.cli import main
from sparsescope.model.spmv import spmv_traffic
from sparsescope.model.traffic import csr_spmv_traffic
from sparsescope.ops.base import Op, OpCase, ParamSpec, canonical_csr
from sparsescope.ops.params import OpDerived, OpParams
from sparsescope.ops.spmv import check_output, make_x
from sparsescope.report.ops_common import md_table
from sparsescope.report.sections import markdown_section
from sparsescope.results.io import read_runset
from sparsescope.timing.host import time_host

OP = "spmv-t"


@dataclass(frozen=True)
class TransposedParams(OpParams):
    x_scale: int = 1
    """x's entries times this factor (count)."""


class SpmvTransposedOp(Op):
    """``y = A^T x``: x has one entry per row of A, scaled by ``x_scale``."""

    name = OP
    description = "SpMV with the transposed matrix"
    params_type = TransposedParams
    derived_type = OpDerived
    params = (ParamSpec("x_scale", 1, int, minimum=1, maximum=8, help="x's entries times this"),)

    def make_case(self, csr, params=None, *, value_dtype="float32", index_bytes=4, seed=0,
                  tolerance=None, strict=False) -> OpCase:
        params = self.resolve_params(params)
        csr = canonical_csr(csr, strict=strict)
        x = make_x(csr.shape[0], seed=seed, dtype=value_dtype) * params.x_scale
        reference = np.asarray(csr.T @ x.astype(np.float64)).ravel()
        vb = np.dtype(value_dtype).itemsize
        return OpCase(self.name, params, csr, x, reference, tolerance or 1e-5,
                      spmv_traffic(csr.shape[1], csr.shape[0], csr.nnz, value_bytes=vb,
                                   index_bytes=index_bytes), OpDerived(),
                      csr_spmv_traffic(csr.shape[1], csr.shape[0], csr.nnz, value_bytes=vb,
                                       index_bytes=index_bytes))

    def check(self, out, case):
        return check_output(out, case.reference, case.tolerance)

    def traffic_for(self, rows, cols, nnz, params, derived, *, value_bytes, index_bytes,
                    y_read=False):
        return spmv_traffic(cols, rows, nnz, value_bytes=value_bytes, index_bytes=index_bytes)


class ScipyTransposed(OpBackend):
    capability = Capability(ops=(OP,), value_dtypes=("float32",), index_bytes=(4,),
                            device="cpu", description="SciPy A.T @ x")

    def prepare(self, case, value_dtype, index_bytes):
        return sp.csr_matrix(case.matrix.T, dtype=value_dtype), case.inputs

    def run(self, prepared):
        matrix, x = prepared
        return matrix @ x

    def time(self, prepared, config):
        matrix, x = prepared
        return time_host(lambda: matrix @ x, config, working_set_bytes=matrix.data.nbytes)

    def library_versions(self):
        return {"scipy": sp.__name__}


def transposed_section(runset, inputs):
    rows = [[c.matrix, c.backend, c.outcome, c.time_ms] for c in runset.cases]
    return markdown_section("SpMV transposed", [(
        "SpMV transposed: times", md_table(["matrix", "backend", "outcome", "ms"], rows))],
        summary=[f"{len(runset.cases)} transposed case(s)."])


@pytest.fixture
def registered():
    registry.register_op(registry.OpEntry(
        OP, "SpMV transposed", SpmvTransposedOp, TransposedParams,
        "sparsescope.ops.params:OpDerived", transposed_section, default_suite="seed6",
        defaults={"cpu": ("spmv-t-scipy",), "gpu": ("spmv-t-scipy",)}))
    registry.register_backend(OP, "spmv-t-scipy", ScipyTransposed)
    yield
    registry.unregister(OP)


@pytest.mark.usefixtures("cpu_ceilings_measured_once")
def test_a_registered_op_runs_end_to_end(registered, tmp_path):
    out = api.run(suite="seed6", scale=0.005, op=OP, out_dir=tmp_path, store=False)
    cases = out.runset.cases
    assert {c.backend for c in cases} == {"spmv-t-scipy"} and len(cases) == 6
    assert all(c.outcome == "ok" and c.correctness.rel_err < 1e-5 for c in cases)
    # the backend declared CSR's bytes for A^T: rows and columns swap roles
    first = out.runset.matrices[0].stats
    assert cases[0].traffic == csr_spmv_traffic(first.cols, first.rows, first.nnz)
    report = (tmp_path / "report.md").read_text()
    assert report.startswith("# SpMV transposed performance report")
    assert "3. SpMV transposed: times" in report and "6 transposed case(s)." in report
    back = read_runset(out.results_path)
    assert back.cases == cases and back.cases[0].params == TransposedParams(x_scale=1)


@pytest.mark.usefixtures("cpu_ceilings_measured_once")
def test_the_params_spec_is_the_command_line_option(registered, tmp_path, capsys):
    for command in ("run", "sweep"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert "--x-scale N" in text and "spmv-t: x's entries times this (1 to 8;" in text
    out = tmp_path / "run"
    rc = main(["run", "--op", OP, "--suite", "seed6", "--scale", "0.002", "--out", str(out),
               "--no-store", "--json", "--warmups", "0", "--repeats", "1", "--flush", "off",
               "--x-scale", "2", "--x-scale", "3"])
    assert rc == 0
    capsys.readouterr()
    cases = read_runset(out / "results.json").cases
    assert sorted({c.params.x_scale for c in cases}) == [2, 3] and len(cases) == 12
    assert all(c.outcome == "ok" for c in cases)
    # the op's own spec checks the value, and another op refuses the option, before any run
    for argv, message in ((["--op", OP, "--x-scale", "9"], "x_scale must be <= 8, got '9'"),
                          (["--op", "spmv", "--x-scale", "2"],
                           "--x-scale applies to --op spmv-t, not --op spmv")):
        rc = main(["run", "--suite", "seed6", "--scale", "0.002", "--out",
                   str(tmp_path / "bad"), "--no-store", "--json", *argv])
        assert rc == 2
        assert message in json.loads(capsys.readouterr().out)["error"]
        assert not (tmp_path / "bad" / "results.json").exists()


def test_an_unregistered_op_is_gone_again(registered):
    registry.unregister(OP)
    assert OP not in registry.OPS and registry.backend_names(OP) == []


def test_every_op_parameter_is_an_option(capsys):
    from sparsescope.cli.op_options import option_name
    from sparsescope.ops.registry import get_op

    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = capsys.readouterr().out
    params = {p.name for op in registry.OPS for p in get_op(op).params}
    assert {"k", "layout", "rows_selected", "rows", "weights", "out_of_range"} <= params
    for name in params:
        assert f"{option_name(name)} " in text, name
