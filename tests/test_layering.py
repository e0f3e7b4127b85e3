"""Layering of ``sparsescope``: which stage may import which, and no import-time cycles.

The stages, lowest first (a stage imports only from stages below it, or from itself)::

    errors, _optional, _atomic, _compressed,       leaves (exceptions and small helpers;
        _tools, registry, stages                   the stage clock imports nothing of ours)
    record modules: hardware.types, hardware.specs,
        matrices.types, timing.types               records and the datasheet table
    model        the pure first-principles model (bytes, roofline, Little's law, DAE); it may
                 import only the leaves and record modules above; inside it the warp model
                 runs one way: concurrency <- littles_law <- dae
    hardware, matrices, timing                     detect / measure the device, load and
                 generate matrices, time a call; none imports the model, matrices imports no
                 hardware, timing may use hardware (cache sizes)
    ops, results                                   operations and run records
    context                                        the device and prediction context
    backends, sweep                                implementations of the ops, many cases
    sass, profile, analyze                         SASS, profiler and analysis
    report, whatif, api, cli                       what users call

No module of a lower stage (:data:`LOWER_STAGES`) imports one of :data:`TOP_STAGES`, at module
level or inside a function; and there is no import cycle at all, counting imports inside
functions (:func:`test_no_import_cycle_counting_imports_in_functions`).

Every module under ``src/sparsescope`` is parsed with :mod:`ast` (nothing is imported), and
each ``import`` / ``from ... import`` naming ``sparsescope`` becomes an edge to the most
specific module it names. The stage rules count every import, at module level or inside a
function (a lazy import is still a dependency); the cycle check counts only imports run when
the module is imported (not inside a function, not under ``if TYPE_CHECKING:``), and
counts the parent packages such an import runs. Imports by computed name
(``importlib.import_module``, the lazy ``__getattr__`` of a package) are not seen.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

PACKAGE = "sparsescope"
SRC = Path(__file__).resolve().parents[1] / "src" / PACKAGE

#: Modules (relative to ``sparsescope``; a name covers its submodules too) the model may import.
MODEL_MAY_IMPORT = frozenset({"model", "hardware.types", "hardware.specs", "matrices.types",
                              "errors", "_optional", "timing.types"})
#: Stages above the model: nothing the model imports, even indirectly, may reach one of them.
ABOVE_MODEL = frozenset({"backends", "ops", "profile", "sass", "analyze", "report", "cli",
                         "api", "results", "context", "sweep", "whatif"})
#: stage -> stages (or modules) it must not import.
FORBIDDEN = {
    "hardware": ABOVE_MODEL | {"model"},
    "matrices": ABOVE_MODEL | {"model", "hardware"},
    "timing": frozenset({"backends", "ops", "model", "profile", "sass", "analyze", "report",
                         "cli", "api", "context", "sweep", "whatif"}),
    # the device context sits below backends, sweep, analyze and the what-if
    "context": frozenset({"backends", "sweep", "analyze", "profile", "target"}),
    # run records are read by every stage above; a results folder's README, which names the
    # kernels a run chose among, is a renderer (report.readme)
    "results": frozenset({"backends", "sweep", "analyze", "profile", "target", "context"}),
}

#: Stages that receive what they need as parameters and never import what users call.
LOWER_STAGES = frozenset({"matrices", "ops", "backends", "timing", "hardware", "model", "sass",
                          "results", "profile", "sweep", "context"})
#: What users call: the API, the what-if, the CLI and the report.
TOP_STAGES = frozenset({"api", "whatif", "cli", "report"})

#: Module-level import cycles that exist today in files outside the model / hardware stages.
#: Each is the sorted tuple of the modules of one strongly connected component. The list may
#: only shrink: a new cycle fails the test, and so does a listed one that no longer exists.
KNOWN_CYCLES: frozenset[tuple[str, ...]] = frozenset()


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    import_time: bool
    """Run when ``source`` is imported (not in a function, not under TYPE_CHECKING)."""
    package_run: bool = False
    """``target`` is a package whose ``__init__`` the import runs before the named module."""


def _module_name(path: Path) -> str:
    parts = (PACKAGE, *path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _resolve(name: str) -> str | None:
    """The most specific known module that ``name`` (a module or a module's attribute) names."""
    modules = _modules()
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(node: ast.AST, import_time: bool) -> Iterable[tuple[ast.stmt, bool]]:
    """Every Import / ImportFrom under ``node``, with whether it runs at module import."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child, import_time
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            yield from _imports(child, False)
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for stmt in child.body:
                yield from _imports(ast.Module(body=[stmt], type_ignores=[]), False)
            for stmt in child.orelse:
                yield from _imports(ast.Module(body=[stmt], type_ignores=[]), import_time)
        else:
            yield from _imports(child, import_time)


def _targets(module: str, stmt: ast.stmt) -> Iterable[str]:
    if isinstance(stmt, ast.Import):
        yield from (alias.name for alias in stmt.names)
        return
    assert isinstance(stmt, ast.ImportFrom)
    base = stmt.module or ""
    if stmt.level:
        is_package = _modules()[module].name == "__init__.py"
        anchor = module.split(".")[: len(module.split(".")) - stmt.level + is_package]
        base = ".".join([*anchor, base] if base else anchor)
    for alias in stmt.names:
        # ``from pkg import sub`` names the submodule when there is one, else pkg itself.
        yield base if alias.name == "*" else f"{base}.{alias.name}"


@cache
def _edges() -> tuple[Edge, ...]:
    edges = set()
    for module, path in _modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for stmt, import_time in _imports(tree, True):
            for name in _targets(module, stmt):
                if name != PACKAGE and not name.startswith(PACKAGE + "."):
                    continue
                target = _resolve(name)
                if target and target != module:
                    edges.add(Edge(module, target, stmt.lineno, import_time))
    return tuple(sorted(edges, key=lambda e: (e.source, e.line, e.target)))


def _relative(module: str) -> str:
    return module[len(PACKAGE) + 1:] if module != PACKAGE else ""


def _stage(module: str) -> str:
    return _relative(module).partition(".")[0]


def _covered(module: str, names: Iterable[str]) -> bool:
    rel = _relative(module)
    return any(rel == n or rel.startswith(n + ".") for n in names)


def _describe(edges: Iterable[Edge]) -> str:
    def note(e: Edge) -> str:
        if e.package_run:
            return "  [package __init__ run by the import]"
        return "" if e.import_time else "  [in a function or under TYPE_CHECKING]"

    return "\n".join(f"  {e.source} (line {e.line}) -> {e.target}{note(e)}" for e in edges)


def test_the_parser_sees_the_package():
    modules = _modules()
    assert {f"{PACKAGE}.model.dae", f"{PACKAGE}.hardware.gpu_ceilings",
            f"{PACKAGE}.backends._gpu"} <= modules.keys()
    edges = {(e.source, e.target, e.import_time) for e in _edges()}
    # a plain from-import, a module named through its package, a re-export, a lazy import
    assert (f"{PACKAGE}.model.dae", f"{PACKAGE}.model.littles_law", True) in edges
    assert (f"{PACKAGE}.hardware.detect", f"{PACKAGE}.hardware.cpuinfo", True) in edges
    assert (f"{PACKAGE}.backends._gpu", f"{PACKAGE}.hardware._gpu_runtime", True) in edges
    assert (f"{PACKAGE}.timing.host", f"{PACKAGE}.hardware.cpuinfo", False) in edges


def test_model_imports_only_what_lies_below_it():
    bad = [e for e in _edges()
           if _stage(e.source) == "model" and not _covered(e.target, MODEL_MAY_IMPORT)]
    assert not bad, ("model may import only from "
                     f"{sorted(MODEL_MAY_IMPORT)}; these imports break the rule:\n"
                     + _describe(bad))


def test_model_does_not_reach_a_higher_stage_indirectly():
    """Closure of everything the model imports, counting the packages a dotted import runs."""
    graph: dict[str, set[str]] = {}
    for e in _edges():
        graph.setdefault(e.source, set()).add(e.target)
    seen: dict[str, str] = {}  # module -> the module that pulled it in
    todo = [m for m in _modules() if _stage(m) == "model"]
    for m in todo:
        seen[m] = m
    while todo:
        module = todo.pop()
        parts = module.split(".")
        parents = {".".join(parts[:i]) for i in range(2, len(parts))}  # packages it runs
        for target in graph.get(module, set()) | parents:
            if target not in seen:
                seen[target] = module
                todo.append(target)
    bad = sorted(m for m in seen if _covered(m, ABOVE_MODEL))
    assert not bad, "the model reaches a higher stage: " + ", ".join(
        f"{m} (via {seen[m]})" for m in bad)


@pytest.mark.parametrize("stage", sorted(FORBIDDEN))
def test_lower_stages_do_not_import_upward(stage):
    bad = [e for e in _edges()
           if _stage(e.source) == stage and _covered(e.target, FORBIDDEN[stage])]
    assert not bad, (f"{stage} must not import from {sorted(FORBIDDEN[stage])}:\n"
                     + _describe(bad))


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components of more than one module, or with a self-loop."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph.get(succ, ())))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1 or node in graph.get(node, ()):
                        components.append(sorted(component))
    return components


def _ancestors(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _import_time_edges() -> list[Edge]:
    """Import-time edges, plus the packages an import runs first: ``import a.b.c`` runs
    ``a/__init__`` and ``a/b/__init__`` (except the importer and the packages containing it,
    which are always initialised before it)."""
    edges = []
    for e in _edges():
        if not e.import_time:
            continue
        edges.append(e)
        own = {*_ancestors(e.source), e.source}
        edges += [Edge(e.source, package, e.line, True, package_run=True)
                  for package in _ancestors(e.target) if package not in own]
    return edges


def _import_time_cycles() -> dict[tuple[str, ...], list[Edge]]:
    edges = _import_time_edges()
    graph: dict[str, set[str]] = {m: set() for m in _modules()}
    for e in edges:
        graph[e.source].add(e.target)
    cycles = {}
    for component in _strongly_connected(graph):
        members = set(component)
        cycles[tuple(component)] = sorted(
            {e for e in edges if e.source in members and e.target in members},
            key=lambda e: (e.source, e.line, e.target))
    return cycles


def test_model_modules_import_each_other_one_way_only():
    """No cycle inside the model, lazy imports included (littles_law <-> dae was one)."""
    graph: dict[str, set[str]] = {}
    for e in _edges():
        if _stage(e.source) == "model" and _stage(e.target) == "model":
            graph.setdefault(e.source, set()).add(e.target)
    cycles = _strongly_connected(graph)
    assert not cycles, "\n".join(
        f"{' <-> '.join(c)}:\n" + _describe(e for e in _edges()
                                            if e.source in c and e.target in c)
        for c in cycles)


def test_no_new_module_level_import_cycle():
    cycles = _import_time_cycles()
    new = {c: edges for c, edges in cycles.items() if c not in KNOWN_CYCLES}
    assert not new, "module-level import cycles (break them, do not list them):\n" + "\n".join(
        f"{' <-> '.join(c)}:\n{_describe(edges)}" for c, edges in new.items())


def test_known_cycles_are_still_there():
    gone = KNOWN_CYCLES - _import_time_cycles().keys()
    assert not gone, ("these cycles no longer exist (or changed members); remove them from "
                      f"KNOWN_CYCLES: {sorted(gone)}")


def test_every_module_has_a_known_stage():
    """Each stage is named in the rules above (a new stage must be placed)."""
    known = LOWER_STAGES | TOP_STAGES | {
        "", "analyze", "registry", "errors", "_optional", "_atomic", "_compressed", "_tools",
        "_outputs", "progress", "stages", "target", "__main__"}
    unknown = sorted({_stage(m) for m in _modules()} - known)
    assert not unknown, f"place these stages in tests/test_layering.py: {unknown}"


@pytest.mark.parametrize("stage", sorted(LOWER_STAGES))
def test_lower_stages_never_import_what_users_call(stage):
    """Counting imports inside functions: a lazy import is still a dependency."""
    bad = [e for e in _edges()
           if _stage(e.source) == stage and _stage(e.target) in TOP_STAGES]
    assert not bad, (f"{stage} must not import {sorted(TOP_STAGES)} (pass what it needs as a "
                     "parameter, e.g. a context.DeviceContext):\n" + _describe(bad))


def test_no_import_cycle_counting_imports_in_functions():
    """Module-level strongly connected components over every import edge, lazy ones
    included: there is none."""
    graph: dict[str, set[str]] = {m: set() for m in _modules()}
    for e in _edges():
        graph[e.source].add(e.target)
    cycles = [tuple(c) for c in _strongly_connected(graph)]
    assert not cycles, "import cycles, counting imports inside functions:\n" + "\n".join(
        f"{' <-> '.join(c)}:\n" + _describe(e for e in _edges()
                                            if e.source in c and e.target in c)
        for c in cycles)
