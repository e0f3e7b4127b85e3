"""Adding an op is small: this module alone defines SpMV with the transposed matrix
(``y = A^T x``), one backend and one report section, registers them in the registry table at
run time, and runs them end to end through ``sparsescope.api.run`` -- no file of the package is
touched, and the results file reads back with the op's typed parameters."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparsescope import api, registry
from sparsescope.backends.base import Capability, OpBackend
from sparsescope.model.spmv import spmv_traffic
from sparsescope.model.traffic import csr_spmv_traffic
from sparsescope.ops.base import Op, OpCase, canonical_csr
from sparsescope.ops.params import OpDerived, SpmvParams
from sparsescope.ops.spmv import check_output, make_x
from sparsescope.report.ops_common import md_table
from sparsescope.report.sections import markdown_section
from sparsescope.results.io import read_runset
from sparsescope.timing.host import time_host

OP = "spmv-t"


class SpmvTransposedOp(Op):
    """``y = A^T x``: x has one entry per row of A."""

    name = OP
    description = "SpMV with the transposed matrix"
    params_type = SpmvParams
    derived_type = OpDerived

    def make_case(self, csr, params=None, *, value_dtype="float32", index_bytes=4, seed=0,
                  tolerance=None, strict=False) -> OpCase:
        params = self.resolve_params(params)
        csr = canonical_csr(csr, strict=strict)
        x = make_x(csr.shape[0], seed=seed, dtype=value_dtype)
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
        OP, "SpMV transposed", SpmvTransposedOp, "sparsescope.ops.params:SpmvParams",
        "sparsescope.ops.params:OpDerived", transposed_section, default_suite="seed6",
        defaults={"cpu": ("spmv-t-scipy",), "gpu": ("spmv-t-scipy",)}))
    registry.register_backend(OP, "spmv-t-scipy", ScipyTransposed)
    yield
    registry.unregister(OP)


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
    assert back.cases == cases and isinstance(back.cases[0].params, SpmvParams)


def test_an_unregistered_op_is_gone_again(registered):
    registry.unregister(OP)
    assert OP not in registry.OPS and registry.backend_names(OP) == []
