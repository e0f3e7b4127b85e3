"""Generator sizes that cannot fit are refused before anything is allocated (issue 33)."""

from __future__ import annotations

import pytest
from _matrices_helpers import cli

from sparsescope.errors import UsageError
from sparsescope.matrices import _csr
from sparsescope.matrices.generators import generate


def test_generate_refuses_sizes_beyond_memory(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(_csr, "physical_memory_bytes", lambda: 1 << 30)
    with pytest.raises(UsageError) as info:
        generate("uniform", 10**6, 10**8)
    message = str(info.value)
    assert "with 100,000,000 nonzeros needs" in message
    assert "more than this machine's 1.0 GiB of memory" in message
    code, _, err = cli(["generate", "uniform", "--rows", "1000000", "--nnz", "10000000000",
                        "--out", str(tmp_path / "x.npz")], capsys)
    assert code == 2 and "Traceback" not in err and "10,000,000,000 nonzeros needs" in err
    assert not (tmp_path / "x.npz").exists()


def test_generate_small_sizes_still_work():
    assert generate("uniform", 100, 500).nnz == 500


@pytest.mark.parametrize("param, message", [
    ({"halfwidth": -3}, "halfwidth=-3 must be >= 0"),
    ({"halfwidth": float("nan")}, "halfwidth=nan is not a finite number"),
    ({"block": 2.5}, "block=2.5 must be a whole number"),
    ({"jitter": float("inf")}, "jitter=inf is not a finite number"),
])
def test_generator_parameters_are_finite_and_not_negative(param, message):
    """A NaN reached ``int()`` as a traceback, and a negative half-width was used (issue 33)."""
    from sparsescope.errors import UsageError
    from sparsescope.matrices.generators import generate

    with pytest.raises(UsageError, match=message):
        generate("banded", 100, 500, **param)
    assert generate("banded", 100, 500, jitter=0.3).nnz == 500
