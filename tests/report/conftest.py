"""Fixtures of the report tests; the RunSet builders are in ``report_builders``."""

from __future__ import annotations

import sys
import types

import pytest
from report_builders import FAKE_SPECS, make_cpu_runset, make_gpu_runset

from sparsescope.results.records import RunSet


@pytest.fixture(scope="module", autouse=True)
def fake_specs():
    """Replace the spec table module (for this test module) so the tables use these three GPUs."""
    module = types.ModuleType("sparsescope.hardware.specs")

    def get_spec(name):
        for spec in FAKE_SPECS:
            if spec.name.lower() == name.lower():
                return spec
        from sparsescope.errors import UnknownNameError

        raise UnknownNameError("GPU", name, [s.name for s in FAKE_SPECS])

    from sparsescope.hardware import specs as real
    from sparsescope.hardware.specs import tf32_tensor_gflops

    # Architecture constants (carveouts, L1 sizes) are facts of the compute capability, not
    # rows of the GPU table: the fake module keeps them, whichever module imports them first.
    for name in dir(real):
        if name.isupper():
            setattr(module, name, getattr(real, name))
    module.get_spec = get_spec
    module.list_specs = lambda: list(FAKE_SPECS)
    module.tf32_tensor_gflops = tf32_tensor_gflops   # a formula of the spec, not a table row
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(sys.modules, "sparsescope.hardware.specs", module)
        yield FAKE_SPECS


@pytest.fixture
def gpu_runset() -> RunSet:
    return make_gpu_runset()


@pytest.fixture
def cpu_runset() -> RunSet:
    return make_cpu_runset()
