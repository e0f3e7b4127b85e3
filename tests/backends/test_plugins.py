"""Third-party backends as plug-ins (``backends.plugins``): loaded from a module, a .py file,
``SPARSESCOPE_PLUGINS`` or an entry point; checked, registered beside the built-ins, run through
the one runner; every bad plug-in a one-line error naming it."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sparsescope import registry
from sparsescope.backends import plugins
from sparsescope.backends.registry import get_backend, list_backends
from sparsescope.backends.runner import run_case
from sparsescope.context import CPU_BACKEND, not_modelled_context
from sparsescope.timing.types import TimingConfig

REPO = Path(__file__).resolve().parents[2]
NUMPY_SRC = REPO / "examples" / "plugin_numpy_spmv" / "src"
NUMPY_PLUGIN = NUMPY_SRC / "sparsescope_numpy_spmv" / "__init__.py"
FAST = TimingConfig(warmups=1, repeats=3, flush_l2=False)


# each test starts with no plug-in loaded and leaves the registry as it found it
pytestmark = pytest.mark.usefixtures("plugin_registry")


def _plugin(tmp_path: Path, body: str, name: str = "plug.py") -> Path:
    """A plug-in file: the imports every test plug-in uses, then ``body``."""
    path = tmp_path / name
    path.write_text(textwrap.dedent('''
        import numpy as np
        from sparsescope.backends.base import Capability, OpBackend, SpmvBackend
        from sparsescope.timing.host import time_host

        class Base(SpmvBackend):
            name = "plug-spmv"
            capability = Capability(ops=("spmv",), value_dtypes=("float32",),
                                    index_bytes=(4,), device="cpu")
            def prepare(self, csr, value_dtype, index_bytes):
                return csr.astype(value_dtype)
            def run(self, prepared, x):
                return prepared @ x
            def time(self, prepared, x, config):
                return time_host(lambda: prepared @ x, config)
            def library_versions(self):
                return {}
        ''') + textwrap.dedent(body))
    return path


def test_a_file_plugin_runs_checked_timed_with_its_declared_bytes(small_matrix):
    loaded = plugins.load_plugin(str(NUMPY_PLUGIN))
    assert [(b.name, b.op, b.device) for b in loaded] == [("numpy-coo-spmv", "spmv", "cpu")]
    assert loaded[0].label == f"plug-in file {NUMPY_PLUGIN}"
    factory = registry.BACKENDS[("spmv", "numpy-coo-spmv")]
    assert factory == plugins.PluginFactory(str(NUMPY_PLUGIN), "numpy-coo-spmv")
    assert "numpy-coo-spmv" in list_backends("spmv") and not registry.is_own("numpy-coo-spmv")

    case = run_case(small_matrix, "numpy-coo-spmv", config=FAST,
                    model=not_modelled_context(CPU_BACKEND))
    assert case.outcome == "ok", case.reason
    assert case.correctness.rel_err < 1e-6
    assert len(case.measurement.samples_ms) == 3
    nnz, (rows, cols) = small_matrix.csr.nnz, small_matrix.csr.shape
    # COO: a row id per nonzero where CSR reads rows + 1 pointers
    assert case.traffic.format == "COO INT32"
    assert case.traffic.row_meta_bytes == 4 * nnz != 4 * (rows + 1)
    assert (case.traffic.values_bytes, case.traffic.indices_bytes) == (4 * nnz, 4 * nnz)
    assert (case.traffic.x_bytes, case.traffic.y_written_bytes) == (4 * cols, 4 * rows)
    assert case.prediction.predicted_ms is None and case.prediction.not_modelled == CPU_BACKEND
    assert case.notes["sum"] == "np.bincount in float64"


def test_index_width_and_dtype_come_from_the_declared_capability(small_matrix):
    plugins.load_plugin(str(NUMPY_PLUGIN))
    case = run_case(small_matrix, "numpy-coo-spmv", config=FAST, value_dtype="float64",
                    index_bytes=8)
    assert case.outcome == "ok" and case.correctness.rel_err < 1e-12
    assert case.traffic.format == "COO INT64"
    assert case.traffic.row_meta_bytes == 8 * small_matrix.csr.nnz
    refused = run_case(small_matrix, "numpy-coo-spmv", config=FAST, value_dtype="float16")
    assert refused.outcome == "skipped" and "float16 not supported" in refused.reason


def test_env_plugins_load_when_a_name_is_missing_and_builtins_load_none(tmp_path, monkeypatch):
    broken = _plugin(tmp_path, "raise RuntimeError('broken on import')\n")
    monkeypatch.setenv(plugins.ENV_PLUGINS, f"{NUMPY_PLUGIN},{broken}")
    assert registry.backend_op("scipy-cpu") == "spmv"  # a built-in: no plug-in loaded
    assert plugins.loaded_plugins() == ()
    with pytest.raises(plugins.PluginError, match=f"plug-in file {broken}: import failed: "
                                                  "RuntimeError: broken on import"):
        list_backends()
    monkeypatch.setenv(plugins.ENV_PLUGINS, str(NUMPY_PLUGIN))
    plugins.forget_plugins()
    assert registry.backend_op("numpy-coo-spmv") == "spmv"
    assert [b.name for b in plugins.loaded_plugins()] == ["numpy-coo-spmv"]


def test_a_module_name_and_its_file_are_one_plugin(monkeypatch):
    monkeypatch.syspath_prepend(str(NUMPY_SRC))
    by_name = plugins.load_plugin("sparsescope_numpy_spmv")
    assert by_name[0].label == "plug-in module 'sparsescope_numpy_spmv'"
    plugins.load_plugin(str(NUMPY_PLUGIN))  # the same class, imported again by path
    assert [b.label for b in plugins.loaded_plugins()] == [by_name[0].label]
    assert plugins.load_plugin("sparsescope_numpy_spmv") == by_name  # once per process


BAD = {
    "no hook": ("x = 1\n", "defines no sparsescope_backends()"),
    "hook not a list": ("def sparsescope_backends():\n    return 3\n",
                        "sparsescope_backends() returned a int, expected a list"),
    "empty": ("def sparsescope_backends():\n    return []\n", "returned no backend"),
    "hook raises": ("def sparsescope_backends():\n    raise RuntimeError('boom')\n",
                    "sparsescope_backends() raised: RuntimeError: boom"),
    "not a backend": ("def sparsescope_backends():\n    return [object]\n",
                      "<class 'object'> is not a backend class"),
    "no name": ("class B(Base):\n    name = ''\ndef sparsescope_backends():\n    return [B]\n",
                "B sets no valid name (got '';"),
    "bad name": ("class B(Base):\n    name = 'My Kernel'\n"
                 "def sparsescope_backends():\n    return [B]\n", "got 'My Kernel'"),
    "no op": ("class B(Base):\n    capability = Capability(ops=(), value_dtypes=('float32',),"
              " index_bytes=(4,), device='cpu')\ndef sparsescope_backends():\n    return [B]\n",
              "B (plug-spmv) declares op(s) none: a backend implements exactly one of spmv"),
    "unknown op": ("class B(Base):\n    capability = Capability(ops=('spgemm',), "
                   "value_dtypes=('float32',), index_bytes=(4,), device='cpu')\n"
                   "def sparsescope_backends():\n    return [B]\n", "declares op(s) spgemm"),
    "spmv base for spmm": ("class B(Base):\n    capability = Capability(ops=('spmm',), "
                           "value_dtypes=('float32',), index_bytes=(4,), device='cpu')\n"
                           "def sparsescope_backends():\n    return [B]\n",
                           "is an SpmvBackend but declares op 'spmm': derive it from OpBackend"),
    "device": ("class B(Base):\n    capability = Capability(ops=('spmv',), value_dtypes="
               "('float32',), index_bytes=(4,), device='tpu')\n"
               "def sparsescope_backends():\n    return [B]\n", "declares device 'tpu'"),
    "no run": ("class B(SpmvBackend):\n    name = 'b'\n    capability = Base.capability\n"
               "    def prepare(self, csr, v, i):\n        return csr\n"
               "def sparsescope_backends():\n    return [B]\n",
               "B (b) does not implement library_versions, run, time"),
    "built-in name": ("class B(Base):\n    name = 'scipy-cpu'\n"
                      "def sparsescope_backends():\n    return [B]\n",
                      "backend name 'scipy-cpu' is a built-in backend's; choose another name"),
    "one name twice": ("class B(Base):\n    pass\ndef sparsescope_backends():\n"
                       "    return [Base, B]\n", "gives backend name(s) plug-spmv more than once"),
    "import error": ("import not_a_module_anywhere_xyz\n",
                     "import failed: ModuleNotFoundError: No module named "
                     "'not_a_module_anywhere_xyz'"),
    "syntax error": ("def broken(:\n", "import failed: SyntaxError"),
}


@pytest.mark.parametrize("what", list(BAD))
def test_a_bad_plugin_is_one_line_naming_it_and_registers_nothing(tmp_path, what):
    body, problem = BAD[what]
    path = _plugin(tmp_path, body)
    before = dict(registry.BACKENDS)
    with pytest.raises(plugins.PluginError) as caught:
        plugins.load_plugin(str(path))
    message = str(caught.value)
    assert message.startswith(f"plug-in file {path}: ") and "\n" not in message
    assert problem in message
    assert registry.BACKENDS == before and plugins.loaded_plugins() == ()
    with pytest.raises(plugins.PluginError, match="plug-in file"):  # asked again: same error
        plugins.load_plugin(str(path))


def test_missing_module_or_file_names_it(tmp_path):
    with pytest.raises(plugins.PluginError, match="plug-in module 'no_such_plugin_xyz': no "
                                                  "such module on sys.path"):
        plugins.load_plugin("no_such_plugin_xyz")
    with pytest.raises(plugins.PluginError, match="plug-in file .*gone.py: no such file"):
        plugins.load_plugin(str(tmp_path / "gone.py"))


def test_a_module_name_is_found_in_the_working_folder_as_python_m_would(tmp_path,
                                                                       monkeypatch):
    """The ``sparsescope`` script's folder is on sys.path, the working folder not: a plug-in
    named by module is looked for there too, and the path is left alone when it is not."""
    _plugin(tmp_path, "def sparsescope_backends():\n    return [Base]\n", "cwd_only_plug.py")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    before = list(sys.path)
    with pytest.raises(plugins.PluginError, match=f"or in {tmp_path};"):
        plugins.load_plugin("not_here_either_xyz")
    assert sys.path == before
    (loaded,) = plugins.load_plugin("cwd_only_plug")
    assert loaded.name == "plug-spmv" and loaded.label == "plug-in module 'cwd_only_plug'"
    assert sys.path == [*before, str(tmp_path)]


def test_two_plugins_with_one_name_are_refused_naming_the_first(tmp_path):
    first = _plugin(tmp_path, "def sparsescope_backends():\n    return [Base]\n", "first.py")
    second = _plugin(tmp_path, "def sparsescope_backends():\n    return [Base]\n", "second.py")
    plugins.load_plugin(str(first))
    with pytest.raises(plugins.PluginError, match=f"plug-in file {second}: backend name "
                       f"'plug-spmv' is already registered by plug-in file {first}"):
        plugins.load_plugin(str(second))
    assert registry.BACKENDS[("spmv", "plug-spmv")].spec == str(first)


def test_a_name_registered_by_other_code_is_not_taken(tmp_path):
    registry.register_backend("spmv", "plug-spmv", "sparsescope.backends.scipy_cpu:"
                                                   "ScipyCpuBackend")
    path = _plugin(tmp_path, "def sparsescope_backends():\n    return [Base]\n")
    with pytest.raises(plugins.PluginError, match="'plug-spmv' is already registered \\(op "
                                                  "spmv\\) by code that ran before it"):
        plugins.load_plugin(str(path))


def test_a_wrong_output_is_a_failed_case_not_a_crash(tmp_path, small_matrix):
    path = _plugin(tmp_path, '''
        class Short(Base):
            name = "short-spmv"
            def run(self, prepared, x):
                return (prepared @ x)[:-1]

        class Doubled(Base):
            name = "doubled-spmv"
            def run(self, prepared, x):
                return 2 * (prepared @ x)

        def sparsescope_backends():
            return [Short, Doubled]
        ''')
    plugins.load_plugin(str(path))
    short = run_case(small_matrix, "short-spmv", config=FAST)
    assert short.outcome == "failed"
    assert short.reason == "output has shape (299,), expected (300,)"
    doubled = run_case(small_matrix, "doubled-spmv", config=FAST)
    assert doubled.outcome == "failed" and doubled.measurement is None  # never timed
    assert doubled.correctness.rel_err == pytest.approx(1.0, rel=1e-6)


def test_an_op_backend_plugin_for_spmm(tmp_path, small_matrix):
    path = _plugin(tmp_path, '''
        class DenseSpmm(OpBackend):
            name = "dense-spmm"
            capability = Capability(ops=("spmm",), value_dtypes=("float32",),
                                    index_bytes=(4,), device="cpu")
            def prepare(self, case, value_dtype, index_bytes):
                return case.matrix.toarray().astype(value_dtype), case.inputs
            def run(self, prepared):
                a, x = prepared
                return a @ x
            def time(self, prepared, config):
                return time_host(lambda: self.run(prepared), config)
            def library_versions(self):
                return {"numpy": np.__version__}

        def sparsescope_backends():
            return [DenseSpmm]
        ''')
    plugins.load_plugin(str(path))
    assert registry.backend_op("dense-spmm") == "spmm"
    case = run_case(small_matrix, "dense-spmm", "spmm", {"k": 8}, config=FAST)
    assert case.outcome == "ok", case.reason
    assert case.traffic.x_bytes == small_matrix.csr.shape[1] * 8 * 4  # CSR SpMM's, the default


def test_an_entry_point_naming_a_class_is_discovered(tmp_path, monkeypatch):
    """An installed distribution, as pip lays one out: its module and a .dist-info folder
    whose entry_points.txt names a backend class directly."""
    (tmp_path / "demo_ep_backend.py").write_text(
        "from sparsescope.backends.scipy_cpu import ScipyCpuBackend\n\n\n"
        "class DemoEp(ScipyCpuBackend):\n    name = 'demo-ep'\n")
    info = tmp_path / "demo_ep-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: demo-ep\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[sparsescope.backends]\ndemo = demo_ep_backend:DemoEp\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "demo-ep" not in list_backends()  # SPARSESCOPE_DISABLE_PLUGIN_AUTOLOAD=1
    monkeypatch.setenv(plugins.ENV_NO_AUTOLOAD, "0")
    plugins.forget_plugins()
    assert "demo-ep" in list_backends("spmv")
    (loaded,) = plugins.loaded_plugins()
    assert loaded.spec == "entry-point:demo"
    assert loaded.label == "plug-in entry point 'demo' (sparsescope.backends)"
    assert get_backend("demo-ep").name == "demo-ep"


def test_the_factory_loads_its_plugin_in_a_fresh_process(tmp_path):
    """What a sweep's Dask worker does: it receives the task and the registry's factory
    (pickled), registers the factory and runs the case, the plug-in loaded there by it."""
    from sparsescope.sweep.sources import expand_sources
    from sparsescope.sweep.tasks import plan_tasks

    mtx = tmp_path / "tiny.mtx"
    mtx.write_text("%%MatrixMarket matrix coordinate real general\n3 3 4\n1 1 1.0\n"
                   "1 3 2.0\n2 2 3.0\n3 1 4.0\n")
    plugins.load_plugin(str(NUMPY_PLUGIN))
    (task,) = plan_tasks(expand_sources([str(mtx)]), ["numpy-coo-spmv"], "spmv")
    factory = registry.BACKENDS[("spmv", "numpy-coo-spmv")]
    (tmp_path / "job.pkl").write_bytes(pickle.dumps((task, FAST, factory)))
    script = textwrap.dedent(f'''
        import json, pickle
        from sparsescope.backends import plugins
        from sparsescope.sweep.worker import run_task
        task, timing, factory = pickle.loads(open({str(tmp_path / "job.pkl")!r}, "rb").read())
        case = run_task(task, timing, factory=factory)["case"]
        print(json.dumps({{"case": case, "loaded": [b.name for b in plugins.loaded_plugins()]}}))
        ''')
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env={**_env_without_plugins()})
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["loaded"] == ["numpy-coo-spmv"]
    case = result["case"]
    assert (case["backend"], case["outcome"]) == ("numpy-coo-spmv", "ok")
    assert case["traffic"]["row_meta_bytes"] == 4 * 4  # 4 nonzeros, a row id each
    assert case["correctness"]["rel_err"] < 1e-6


def _env_without_plugins() -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if k != plugins.ENV_PLUGINS}
    env[plugins.ENV_NO_AUTOLOAD] = "1"
    return env


def test_nothing_is_left_registered_by_forget():
    plugins.load_plugin(str(NUMPY_PLUGIN))
    plugins.forget_plugins()
    assert ("spmv", "numpy-coo-spmv") not in registry.BACKENDS
    assert plugins.loaded_plugins() == ()
    assert "numpy-coo-spmv" not in list_backends()  # nothing configured to rediscover
