"""Third-party backends as plug-ins: a kernel of yours run, checked, timed, predicted and
reported beside ours, without editing :mod:`sparsescope.registry`.

Two ways in, one contract:

* **installed**: a distribution declares an entry point in the group ``sparsescope.backends``
  (the convention pytest and Dask use)::

      [project.entry-points."sparsescope.backends"]
      my-kernels = "my_kernels:sparsescope_backends"

  Installed plug-ins are found (:func:`discover`) the first time the registry is asked for the
  list of backends or for a name it does not hold; ``SPARSESCOPE_DISABLE_PLUGIN_AUTOLOAD=1``
  leaves them alone;
* **not installed**: ``--plugin MODULE`` (``run``, ``sweep``, ``model``, ``profile``;
  repeatable), a module name or the path of a ``.py`` file, or the environment variable
  ``SPARSESCOPE_PLUGINS`` (the same, comma-separated).

The contract is one function, :data:`HOOK`: the plug-in module defines ``sparsescope_backends()``
returning a list of backend classes. An entry point names that function, the module, or one
backend class. Each class derives from :class:`~sparsescope.backends.base.SpmvBackend` or
:class:`~sparsescope.backends.base.OpBackend` and declares, as our backends do:

* ``name``: its registry name, not one of a built-in backend (lowercase, digits, ``-_.``);
* ``capability``: a :class:`~sparsescope.backends.base.Capability` naming exactly one op of
  :data:`sparsescope.registry.OPS`, its value dtypes, index widths and device (cpu / gpu);
* the bytes one call moves (``traffic``, or ``own_traffic`` for an SpMV format): plain CSR's by
  default; optionally ``kernel_shape`` / ``shape`` and ``host_plan`` for the time model (without
  them its cases are "not modelled", with that reason).

A plug-in backend is registered in :data:`sparsescope.registry.BACKENDS` as a
:class:`PluginFactory` (where it came from and its name, picklable), so a sweep's Dask worker
that receives the factory loads the same plug-in itself. ``--plugin`` also adds its modules to
``SPARSESCOPE_PLUGINS`` for the processes a command starts (the ncu target of ``profile``, a
local cluster's workers). Plug-in backends are compared as libraries (``registry.is_own`` is
False): "own" marks this repository's kernels, whose source a sweep fingerprints.

Every problem is a :class:`PluginError` (a :class:`~sparsescope.errors.UsageError`, exit 2)
naming the plug-in: an import that fails, no hook, no op, a name of a built-in backend, two
plug-ins with one name. A wrong output at run time is the runner's to judge: a failed case.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import re
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from sparsescope import registry
from sparsescope.backends.base import Backend, Capability, SpmvBackend
from sparsescope.errors import UsageError

#: The entry-point group installed plug-ins declare.
ENTRY_POINT_GROUP = "sparsescope.backends"
#: The function a plug-in module defines: ``sparsescope_backends() -> list of Backend classes``.
HOOK = "sparsescope_backends"
#: Plug-ins to load in every process (module names or .py paths, comma-separated).
ENV_PLUGINS = "SPARSESCOPE_PLUGINS"
#: Set (to anything but empty or 0) to leave installed plug-ins (entry points) unloaded.
ENV_NO_AUTOLOAD = "SPARSESCOPE_DISABLE_PLUGIN_AUTOLOAD"
#: The entry-point spec prefix (``entry-point:NAME``), as :func:`load_plugin` takes it.
ENTRY_POINT_PREFIX = "entry-point:"
#: What a backend name may be: lowercase letters, digits, ``-``, ``_``, ``.`` (``[...]`` is a
#: kernel variant's label, ``,`` separates names in lists).
NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9._-]*")


class PluginError(UsageError):
    """A plug-in that cannot be loaded or registered; the message names it and the problem."""


@dataclass(frozen=True)
class PluginBackend:
    """One backend a plug-in registered."""

    name: str
    """Its registry name."""
    op: str
    """The op it implements (one of ``registry.OPS``)."""
    device: str
    """``cpu`` or ``gpu`` (its capability's)."""
    spec: str
    """What loaded it, as :func:`load_plugin` takes it: a module name, an absolute .py path,
    or ``entry-point:NAME``."""
    label: str
    """How messages name the plug-in, e.g. ``plug-in module my_kernels``."""
    cls: type
    """The backend class."""


@dataclass(frozen=True)
class PluginFactory:
    """A plug-in backend as the registry holds it: called like a class, it builds the backend,
    loading the plug-in first in a process that has not (a sweep worker). Pickled by value."""

    spec: str
    """The plug-in, as :func:`load_plugin` takes it."""
    name: str
    """The backend's registry name."""

    def __call__(self, **options: Any) -> Backend:
        found = _BY_NAME.get(self.name)
        if found is None:
            load_plugin(self.spec)
            found = _BY_NAME.get(self.name)
        if found is None:
            raise PluginError(f"{_label(self.spec)} no longer provides backend {self.name!r}")
        return found.cls(**options)


_BY_NAME: dict[str, PluginBackend] = {}
"""Backend name -> the plug-in backend registered under it, in this process."""
_LOADED: dict[str, tuple[PluginBackend, ...]] = {}
"""Plug-in spec -> the backends it registered."""
_FAILED: dict[str, PluginError] = {}
"""Plug-in spec -> why it could not be loaded (raised again when asked again)."""
_DISCOVERED = False
"""Whether :func:`discover` has loaded the installed and ``SPARSESCOPE_PLUGINS`` plug-ins."""
_DISCOVERING = False
"""Whether :func:`discover` is running (a plug-in's import may ask the registry again)."""


def loaded_plugins() -> tuple[PluginBackend, ...]:
    """Every plug-in backend registered in this process, in load order."""
    return tuple(_BY_NAME.values())


def plugin_spec(text: str) -> str:
    """``--plugin``'s argument as :func:`load_plugin` keys it: a ``.py`` file (a name ending in
    ``.py``, holding a path separator, or an existing file) as its absolute path, so another
    process finds it from any folder; else a module name, or ``entry-point:NAME`` as it is."""
    text = text.strip()
    if not text:
        raise PluginError("--plugin wants a module name or the path of a .py file, got ''")
    if text.startswith(ENTRY_POINT_PREFIX):
        return text
    if text.endswith(".py") or os.sep in text or "/" in text or Path(text).is_file():
        return str(Path(text).expanduser().resolve())
    return text


def _label(spec: str) -> str:
    if spec.startswith(ENTRY_POINT_PREFIX):
        return f"plug-in entry point {spec[len(ENTRY_POINT_PREFIX):]!r} ({ENTRY_POINT_GROUP})"
    if os.path.isabs(spec):
        return f"plug-in file {spec}"
    return f"plug-in module {spec!r}"


def load_plugin(text: str) -> tuple[PluginBackend, ...]:
    """Load the plug-in ``text`` names (a module name, a .py path, or ``entry-point:NAME``) and
    register its backends; once per process (again: what it registered, or its error)."""
    spec = plugin_spec(text)
    if spec in _LOADED:
        return _LOADED[spec]
    if spec in _FAILED:
        raise _FAILED[spec]
    label = _label(spec)
    try:
        backends = _checked_backends(_classes(_import(spec, label), label), spec, label)
        fresh = [b for b in backends if not _registered_already(b)]
        for backend in fresh:  # every name checked before any is registered
            _refuse_clash(backend)
        for backend in fresh:
            registry.register_backend(backend.op, backend.name,
                                      PluginFactory(backend.spec, backend.name))
            _BY_NAME[backend.name] = backend
    except PluginError as exc:
        _FAILED[spec] = exc
        raise
    _LOADED[spec] = backends
    return backends


def load_plugins(texts: list[str] | tuple[str, ...], *, export: bool = False
                 ) -> tuple[PluginBackend, ...]:
    """Load every plug-in of ``texts`` (:func:`load_plugin`); ``export``: also add them to
    ``SPARSESCOPE_PLUGINS`` of this process, so the processes it starts load them too."""
    loaded: list[PluginBackend] = []
    for text in texts:
        loaded += load_plugin(text)
    if export and texts:
        given = [s for s in os.environ.get(ENV_PLUGINS, "").split(",") if s.strip()]
        specs = dict.fromkeys([*given, *(plugin_spec(t) for t in texts)])
        os.environ[ENV_PLUGINS] = ",".join(specs)
    return tuple(loaded)


def discover() -> None:
    """Load the installed plug-ins (entry points of :data:`ENTRY_POINT_GROUP`, unless
    ``SPARSESCOPE_DISABLE_PLUGIN_AUTOLOAD`` is set) and those ``SPARSESCOPE_PLUGINS`` names;
    done once per process when it succeeds (a plug-in that failed fails every time it is
    needed: the registry calls this before listing backends or when a name is missing)."""
    global _DISCOVERED, _DISCOVERING
    if _DISCOVERED or _DISCOVERING:  # a plug-in that lists backends while it is imported
        return
    _DISCOVERING = True
    try:
        if os.environ.get(ENV_NO_AUTOLOAD, "") in ("", "0"):
            for entry in _entry_points():
                load_plugin(ENTRY_POINT_PREFIX + entry.name)
        load_plugins([s for s in os.environ.get(ENV_PLUGINS, "").split(",") if s.strip()])
        _DISCOVERED = True
    finally:
        _DISCOVERING = False


def forget_plugins() -> None:
    """Unregister every plug-in backend and forget what was loaded or failed (a test's clean-up;
    the next lookup discovers again). Modules stay imported."""
    global _DISCOVERED
    for backend in loaded_plugins():
        if isinstance(registry.BACKENDS.get((backend.op, backend.name)), PluginFactory):
            del registry.BACKENDS[(backend.op, backend.name)]
    _BY_NAME.clear()
    _LOADED.clear()
    _FAILED.clear()
    _DISCOVERED = False


# -- loading -----------------------------------------------------------------------------------

def _entry_points() -> list[Any]:
    from importlib.metadata import entry_points

    return sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)


def _import(spec: str, label: str) -> Any:
    """The object a plug-in spec names: a module, or what an entry point names."""
    if spec.startswith(ENTRY_POINT_PREFIX):
        name = spec[len(ENTRY_POINT_PREFIX):]
        found = [e for e in _entry_points() if e.name == name]
        if not found:
            raise PluginError(f"{label}: no installed distribution declares it")
        return _guarded(label, found[0].load)
    if os.path.isabs(spec):
        return _import_file(Path(spec), label)
    return _import_module(spec, label)


def _guarded(label: str, call: Any, what: str = "import failed") -> Any:
    """``call()``; whatever the plug-in's own code raises is a :class:`PluginError` saying
    ``what`` failed."""
    try:
        return call()
    except PluginError:
        raise
    except Exception as exc:
        raise PluginError(f"{label}: {what}: {type(exc).__name__}: {exc}") from None


def _import_module(name: str, label: str) -> ModuleType:
    """Import module ``name``; not found on ``sys.path``, from the working folder, as ``python
    -m`` would (the ``sparsescope`` script's own folder is on the path, the working one not)."""
    if not all(part.isidentifier() for part in name.split(".")):
        raise PluginError(f"{label}: neither a module name nor a .py file")
    module = _import_or_none(name, label)
    if module is None:
        cwd = os.getcwd()
        added = cwd not in sys.path
        if added:
            sys.path.append(cwd)
        module = _import_or_none(name, label)
        if module is None:
            if added:  # nothing found there: leave the path as it was
                sys.path.remove(cwd)
            raise PluginError(f"{label}: no such module on sys.path (PYTHONPATH) or in {cwd}; "
                              "give its name, or the path of its .py file")
    return module


def _import_or_none(name: str, label: str) -> ModuleType | None:
    """The module, or None when it (or a package above it) is not found; any other error,
    a module it imports missing included, is a :class:`PluginError`."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (exc.name == name or name.startswith(exc.name + ".")):
            return None
        raise PluginError(f"{label}: import failed: {type(exc).__name__}: {exc}") from None
    except Exception as exc:  # whatever the plug-in's own code raises while it is imported
        raise PluginError(f"{label}: import failed: {type(exc).__name__}: {exc}") from None


def _import_file(path: Path, label: str) -> ModuleType:
    """Import a .py file as module ``sparsescope_plugin_<stem>`` (registered in
    ``sys.modules``, so its classes and dataclasses work as any module's)."""
    if not path.is_file():
        raise PluginError(f"{label}: no such file")
    stem = re.sub(r"\W", "_", path.stem)
    name = f"sparsescope_plugin_{stem}"
    held = sys.modules.get(name)
    if held is not None and getattr(held, "__file__", None) != str(path):
        name = f"{name}_{zlib.crc32(str(path).encode()):08x}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise PluginError(f"{label}: not a Python module")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        _guarded(label, lambda: module_spec.loader.exec_module(module))
    except PluginError:
        sys.modules.pop(name, None)
        raise
    return module


def _classes(obj: Any, label: str) -> list[Any]:
    """The backend classes a plug-in object gives: a module's hook called, a hook called, a
    class as it is."""
    if isinstance(obj, ModuleType):
        hook = getattr(obj, HOOK, None)
        if hook is None:
            raise PluginError(f"{label}: defines no {HOOK}() (the function returning its "
                              "backend classes; docs/PLUGINS.md)")
        obj = hook
    if isinstance(obj, type):
        return [obj]
    if not callable(obj):
        raise PluginError(f"{label}: names a {type(obj).__name__}, not {HOOK}() or a backend "
                          "class")
    items = _guarded(label, obj, f"{HOOK}() raised")
    if isinstance(items, type):
        return [items]
    try:
        items = list(items)
    except TypeError:
        raise PluginError(f"{label}: {HOOK}() returned a {type(items).__name__}, expected a "
                          "list of backend classes") from None
    if not items:
        raise PluginError(f"{label}: {HOOK}() returned no backend")
    return items


# -- checking and registering ------------------------------------------------------------------

def _checked_backends(classes: list[Any], spec: str, label: str) -> tuple[PluginBackend, ...]:
    """Each class checked (:func:`_checked`); two of one name are refused."""
    backends = tuple(_checked(cls, spec, label) for cls in classes)
    names = [b.name for b in backends]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise PluginError(f"{label}: gives backend name(s) {', '.join(twice)} more than once")
    return backends


def _checked(cls: Any, spec: str, label: str) -> PluginBackend:
    """``cls`` as a plug-in backend, or a :class:`PluginError` saying what it lacks."""
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise PluginError(f"{label}: {cls!r} is not a backend class (derive it from "
                          "SpmvBackend or OpBackend, sparsescope.backends.base)")
    what = f"{label}: {cls.__qualname__}"
    name = getattr(cls, "name", "")
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise PluginError(f"{what} sets no valid name (got {name!r}; lowercase letters, digits, "
                          "'-', '_' and '.', e.g. 'my-csr-spmv')")
    missing = sorted(getattr(cls, "__abstractmethods__", ()))
    if missing:
        raise PluginError(f"{what} ({name}) does not implement {', '.join(missing)}")
    capability = _capability(cls, what)
    ops = tuple(capability.ops)
    if len(ops) != 1 or ops[0] not in registry.OPS:
        raise PluginError(f"{what} ({name}) declares op(s) {', '.join(ops) or 'none'}: a "
                          f"backend implements exactly one of {', '.join(registry.OPS)}")
    if issubclass(cls, SpmvBackend) and ops[0] != "spmv":
        raise PluginError(f"{what} ({name}) is an SpmvBackend but declares op {ops[0]!r}: "
                          "derive it from OpBackend")
    if capability.device not in ("cpu", "gpu"):
        raise PluginError(f"{what} ({name}) declares device {capability.device!r}, not cpu or "
                          "gpu")
    if not capability.value_dtypes or not capability.index_bytes:
        raise PluginError(f"{what} ({name}) declares no value dtype or no index width")
    try:
        registry.check_backend_factory(name, cls)
    except UsageError as exc:
        raise PluginError(f"{label}: {exc}") from None
    return PluginBackend(name=name, op=ops[0], device=capability.device, spec=spec,
                         label=label, cls=cls)


def _capability(cls: type, what: str) -> Capability:
    """The class's declared capability (built once when it is set per instance)."""
    capability = inspect.getattr_static(cls, "capability", None)
    if capability is None or isinstance(capability, property):
        try:
            capability = cls().capability
        except Exception as exc:
            raise PluginError(f"{what} declares no capability as a class attribute and could "
                              f"not be built to read it: {type(exc).__name__}: {exc}") from None
    if not isinstance(capability, Capability):
        raise PluginError(f"{what}.capability is a {type(capability).__name__}, not a "
                          "sparsescope.backends.base.Capability")
    return capability


def _builtin_names() -> set[str]:
    return {name for (_, name) in (*registry.LIBRARY_BACKENDS, *registry.OWN_KERNELS)}


def _same_class(a: type, b: type) -> bool:
    """One class, or one class of one file imported twice (by name and by path)."""
    if a is b:
        return True
    try:
        return a.__qualname__ == b.__qualname__ and inspect.getfile(a) == inspect.getfile(b)
    except (TypeError, OSError):
        return False


def _registered_already(backend: PluginBackend) -> bool:
    """The same class already registered under its name (a plug-in reached twice: by its entry
    point and by --plugin, or by name and by path)."""
    other = _BY_NAME.get(backend.name)
    return other is not None and _same_class(other.cls, backend.cls)


def _refuse_clash(backend: PluginBackend) -> None:
    """A :class:`PluginError` when ``backend``'s name is a built-in's, another plug-in's, or
    one registered at run time by other code."""
    name = backend.name
    if name in _builtin_names():
        raise PluginError(f"{backend.label}: backend name {name!r} is a built-in backend's; "
                          "choose another name")
    other = _BY_NAME.get(name)
    if other is not None:
        raise PluginError(f"{backend.label}: backend name {name!r} is already registered by "
                          f"{other.label}")
    taken = [op for (op, n), factory in registry.BACKENDS.items()
             if n == name and not isinstance(factory, PluginFactory)]
    if taken:
        raise PluginError(f"{backend.label}: backend name {name!r} is already registered (op "
                          f"{taken[0]}) by code that ran before it")
