"""A backend must declare the bytes it moves: registering a class that does not is a clear error
naming the backend (``registry.register_backend``), and a lazy ``"module:Name"`` reference is
checked the same way when it is loaded."""

from __future__ import annotations

import numpy as np
import pytest

from sparsescope import registry
from sparsescope.backends.base import Backend, Capability, OpBackend
from sparsescope.backends.registry import get_backend
from sparsescope.backends.scipy_cpu import ScipyCpuBackend
from sparsescope.errors import UsageError

OP = "spmv"


class NotABackend:
    """Has the runner's methods by name, but no declared traffic and no Backend base."""

    name = "plain"
    capability = Capability(ops=(OP,), value_dtypes=("float32",), index_bytes=(4,),
                            device="cpu")

    def prepare_case(self, case, value_dtype, index_bytes):
        return case

    def run_case(self, prepared):
        return np.zeros(1)


class TrafficNotCallable(ScipyCpuBackend):
    traffic = None


class DeclaresCsr(OpBackend):
    """A proper backend: OpBackend declares CSR's bytes by default."""

    capability = Capability(ops=(OP,), value_dtypes=("float32",), index_bytes=(4,),
                            device="cpu")

    def prepare(self, case, value_dtype, index_bytes):
        return case

    def run(self, prepared):
        return np.zeros(1)

    def time(self, prepared, config):
        raise NotImplementedError

    def library_versions(self):
        return {}


@pytest.fixture
def cleanup():
    names = []
    yield names
    for name in names:
        registry.BACKENDS.pop((OP, name), None)


def test_a_plain_class_without_traffic_is_refused(cleanup):
    cleanup.append("no-traffic")
    with pytest.raises(UsageError) as err:
        registry.register_backend(OP, "no-traffic", NotABackend)
    message = str(err.value)
    assert "'no-traffic'" in message and "must declare the bytes it moves" in message
    assert "NotABackend does not derive from sparsescope.backends.base.Backend" in message
    assert "SpmvBackend" in message and "OpBackend" in message and "traffic" in message
    assert (OP, "no-traffic") not in registry.BACKENDS  # nothing half-registered


def test_a_traffic_that_is_not_callable_is_refused(cleanup):
    cleanup.append("traffic-none")
    with pytest.raises(UsageError, match=r"'traffic-none'.*TrafficNotCallable.traffic is not "
                                         r"callable"):
        registry.register_backend(OP, "traffic-none", TrafficNotCallable)


@pytest.mark.parametrize("factory", [DeclaresCsr, ScipyCpuBackend])
def test_a_backend_subclass_registers(cleanup, factory):
    cleanup.append("declares")
    registry.register_backend(OP, "declares", factory)
    assert registry.BACKENDS[(OP, "declares")] is factory
    assert isinstance(get_backend("declares"), factory)


def test_a_factory_function_and_a_lazy_reference_register_unchecked(cleanup):
    cleanup.extend(["by-function", "lazy-plain", "lazy-scipy"])
    registry.register_backend(OP, "by-function", lambda: ScipyCpuBackend())
    assert get_backend("by-function").name == "scipy-cpu"
    # a lazy reference imports nothing at registration ...
    registry.register_backend(OP, "lazy-plain", f"{__name__}:NotABackend")
    registry.register_backend(OP, "lazy-scipy", "sparsescope.backends.scipy_cpu:ScipyCpuBackend")
    # ... and is checked when the backend is loaded
    with pytest.raises(UsageError, match="'lazy-plain' must declare the bytes it moves"):
        get_backend("lazy-plain")
    assert isinstance(get_backend("lazy-scipy"), ScipyCpuBackend)


def test_the_package_backends_declare_their_bytes():
    # the table's own backends (lazy references into the package) load and pass the check;
    # loading one imports its module only, no GPU library
    own = [name for (_, name), ref in registry.BACKENDS.items()
           if isinstance(ref, str) and ref.startswith("sparsescope.backends.")]
    assert "scipy-cpu" in own and "cuda-spmv-sell" in own
    for name in own:
        assert issubclass(registry.load_backend_factory(name), Backend), name
