"""``sparsescope model MATRIX --work-budget NNZ``: above the budget the model's row terms run
on a stratified row sample, and the JSON and the text say which terms and how large a sample
(``model.work_sample``, issue 35)."""

from __future__ import annotations

import json

import pytest

from sparsescope.cli import main
from sparsescope.context.predict import forget_plans
from sparsescope.matrices import generate, write_matrix

MODULES = ["sparsescope.cli.model_cmd"]
BASE = ["--backend", "cuda-csr-vector", "--backend", "cuda-spmv-sell", "--gpu", "H100",
        "--no-sass", "--no-store"]


@pytest.fixture(scope="module")
def powerlaw(tmp_path_factory):
    """150,000 rows, 600,000 nonzeros (147 windows of 1,024 rows), as .npz."""
    path = tmp_path_factory.mktemp("work") / "pl.npz"
    write_matrix(generate("powerlaw", 150_000, 600_000, seed=3), path)
    return str(path)


def _run(argv, capsys):
    forget_plans()
    rc = main(["model", *argv], modules=MODULES)
    out, err = capsys.readouterr()
    return rc, out, err


def test_the_json_names_the_sample_and_its_terms(powerlaw, capsys):
    rc, out, _ = _run([powerlaw, *BASE, "--work-budget", "60k", "--json"], capsys)
    assert rc == 0
    docs = json.loads(out)
    assert [d["backend"] for d in docs] == ["cuda-csr-vector", "cuda-spmv-sell"]
    work = docs[0]["work_sample"]
    assert work == docs[1]["work_sample"]
    assert work["budget_nnz"] == 60_000 and work["total_nnz"] == 600_000
    assert work["total_windows"] == 147 and 32 <= work["windows"] < 147
    assert work["sample_rows"] < 150_000 / 3 and work["sample_nnz"] < 600_000 / 2
    assert any("block iterations" in t for t in work["terms"])
    assumptions = " ".join(docs[0]["assumptions"])
    assert f"{work['sample_nnz']:,} of 600,000 nonzeros" in assumptions


def test_zero_or_a_large_budget_samples_nothing(powerlaw, capsys):
    for budget in ("0", "600000"):
        rc, out, _ = _run([powerlaw, *BASE, "--work-budget", budget, "--json"], capsys)
        assert rc == 0
        docs = json.loads(out)
        assert all("work_sample" not in d for d in docs)
        assert "stratified row sample" not in " ".join(docs[0]["assumptions"])


def test_the_summary_says_so(powerlaw, capsys):
    rc, out, _ = _run([powerlaw, *BASE, "--work-budget", "6e4"], capsys)
    assert rc == 0
    assert "above the work budget of 60,000 nonzeros (--work-budget)" in out


@pytest.mark.parametrize("value", ["abc", "-5", "1.5"])
def test_a_bad_budget_is_one_line(powerlaw, capsys, value):
    rc, _, err = _run([powerlaw, *BASE, f"--work-budget={value}"], capsys)
    assert rc == 2 and "Traceback" not in err
    assert err.strip().count("\n") == 0 and "--work-budget must be a whole number" in err


def test_the_budget_needs_a_matrix(capsys):
    rc, _, err = _run(["--work-budget", "1M"], capsys)
    assert rc == 2 and "--work-budget needs a MATRIX" in err
