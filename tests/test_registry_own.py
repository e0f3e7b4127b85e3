"""Whether a backend is ours or a library's is declared once, in the registry table: the table
it is listed in (``registry.OWN_KERNELS`` or ``LIBRARY_BACKENDS``), or ``own=True`` when it is
registered at run time. Nothing tests a backend's name for it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sparsescope import registry
from sparsescope.backends.scipy_cpu import ScipyCpuBackend
from sparsescope.report.prediction_tables import prediction_row
from sparsescope.results.records import CaseResult

REPO = Path(__file__).resolve().parents[1]


def test_the_two_tables_make_the_registry_and_the_own_set():
    assert not set(registry.LIBRARY_BACKENDS) & set(registry.OWN_KERNELS)
    assert registry.BACKENDS == {**registry.LIBRARY_BACKENDS, **registry.OWN_KERNELS}
    assert registry.OWN_BACKENDS == {name for (_, name) in registry.OWN_KERNELS}
    for name in ("cuda-spmv-sell", "spmm-cuda-blocktc", "slice-cuda-gather", "cuda-spmv-auto"):
        assert registry.is_own(name)
    for name in ("scipy-cpu", "torch-cusparse-i64", "spmm-ginkgo", "slice-brainevent"):
        assert not registry.is_own(name)
    assert registry.is_own("cuda-spmv-sell[unroll=4,minb=6]")  # a variant of ours is ours


@pytest.fixture
def plugin_backends():
    registry.register_backend("spmv", "cuda-lookalike", ScipyCpuBackend)        # a library
    registry.register_backend("spmv", "my-kernel", ScipyCpuBackend, own=True)    # ours
    yield
    for name in ("cuda-lookalike", "my-kernel"):
        registry.BACKENDS.pop(("spmv", name), None)
        registry.OWN_BACKENDS.discard(name)


def test_ownership_is_declared_not_read_from_the_name(plugin_backends):
    assert not registry.is_own("cuda-lookalike")
    assert registry.is_own("my-kernel") and registry.is_own("my-kernel[unroll=2]")
    # the report reads it from the registry: the prediction table's "own" column
    ok = CaseResult("m", "my-kernel", "spmv", "ok")
    assert prediction_row(ok, 64).own
    assert not prediction_row(CaseResult("m", "cuda-lookalike", "spmv", "ok"), 64).own


def test_unregistering_an_op_forgets_its_own_kernels():
    op = "spmv-own-probe"
    registry.register_backend(op, "probe-kernel", ScipyCpuBackend, own=True)
    assert registry.is_own("probe-kernel")
    registry.unregister(op)
    assert not registry.is_own("probe-kernel") and (op, "probe-kernel") not in registry.BACKENDS


def test_no_source_file_or_script_tests_a_name_prefix_for_ownership():
    # e.g. name.startswith("cuda-"), startswith(("spmm-cuda-", ...)), "cuda-" in name: ask
    # registry.is_own instead
    pattern = re.compile(r"""(startswith\(\(?|in\s+\(?)\s*["'](cuda|spmm-cuda|slice-cuda)-?["']"""
                         r"""|["'](cuda|spmm-cuda|slice-cuda)-["']\s+in\b""")
    found = [f"{p.relative_to(REPO)}:{i}: {line.strip()}"
             for p in sorted([*(REPO / "src").rglob("*.py"), *(REPO / "scripts").rglob("*.py")])
             for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert found == [], "\n".join(found)
