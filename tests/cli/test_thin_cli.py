"""The CLI is thin (issue 32): every command module (``cli/*_cmd.py``) parses arguments, calls
the public API (:mod:`sparsescope.api`) and prints; the work is done below it.

Each command module is parsed with :mod:`ast` (nothing is imported) and every ``import`` /
``from ... import`` naming ``sparsescope`` -- at module level, inside a function or under
``if TYPE_CHECKING:`` -- must name :mod:`sparsescope.api` (the package itself: its public names,
not one of its modules), :mod:`sparsescope.cli` (and its helper modules) or
:mod:`sparsescope.errors`. :data:`CONSTANT_MODULES` would list constant-only modules a parser
needs for argparse choices (none today); :data:`NOT_YET_THIN` the command modules that still
reach below the API, each with the modules it imports and why. Both lists may only shrink: a
new import fails, and so does an entry that no longer holds.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "sparsescope"
CLI = SRC / "cli"
COMMAND_MODULES = sorted(CLI.glob("*_cmd.py"))

#: Modules (and, for cli and errors, their submodules) a command module may import.
ALLOWED_EXACT = frozenset({"sparsescope.api"})
ALLOWED_PACKAGES = ("sparsescope.cli", "sparsescope.errors")

#: Constant-only modules a command's parser may read its choices from, with the reason. Keep
#: it empty where the API can carry the constant.
CONSTANT_MODULES: dict[str, str] = {}

#: Command modules that still import below the API: module -> (the modules, why).
NOT_YET_THIN: dict[str, tuple[frozenset[str], str]] = {
    "analyze_cmd": (
        frozenset({"sparsescope.analyze.records", "sparsescope.analyze.workload",
                   "sparsescope.report.analyze_render", "sparsescope._outputs"}),
        "renders analyses (report.analyze_render), builds workloads (analyze.workload) and "
        "checks --out itself; these belong in api.analysis (another change)"),
    "profile_cmd": (
        frozenset({"sparsescope.profile.collect", "sparsescope.profile.metrics"}),
        "argparse choices (cache / clock controls, name bases, metric groups) read from "
        "profile.collect and profile.metrics, which are not constant-only; through "
        "sparsescope.api they would load the whole API at `sparsescope --help`"),
}


def _imported_modules(tree: ast.AST, module: str) -> list[tuple[str, int]]:
    """(module named, line) of every import of ``sparsescope`` anywhere in ``tree``.

    ``from sparsescope import x`` names ``sparsescope.x`` (a module or a name of the package),
    and so does ``from . import x``; relative imports are resolved against ``module``'s
    package."""
    package = module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names
                      if alias.name.split(".")[0] == "sparsescope"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            if target.split(".")[0] != "sparsescope":
                continue
            if target == "sparsescope" or node.module is None:  # names of a package
                found += [(f"{target}.{alias.name}", node.lineno) for alias in node.names]
            else:
                found.append((target, node.lineno))
    return found


def _allowed(name: str) -> bool:
    return (name in ALLOWED_EXACT or name in CONSTANT_MODULES
            or any(name == p or name.startswith(p + ".") for p in ALLOWED_PACKAGES))


def _below_api(path: Path) -> dict[str, list[int]]:
    """The modules below the API ``path`` imports, with their lines."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out: dict[str, list[int]] = {}
    for name, line in _imported_modules(tree, f"sparsescope.cli.{path.stem}"):
        if not _allowed(name):
            out.setdefault(name, []).append(line)
    return out


def test_command_modules_are_found():
    assert {"model_cmd", "results_cmd", "run_cmd"} <= {p.stem for p in COMMAND_MODULES}


@pytest.mark.parametrize("path", COMMAND_MODULES, ids=lambda p: p.stem)
def test_command_module_imports_only_the_api(path: Path):
    below = _below_api(path)
    known, why = NOT_YET_THIN.get(path.stem, (frozenset(), ""))
    new = {name: lines for name, lines in below.items() if name not in known}
    assert not new, (
        f"{path.name} imports below sparsescope.api: "
        + ", ".join(f"{name} (line {', '.join(map(str, lines))})" for name, lines in new.items())
        + "; call a public function of sparsescope.api (add one in src/sparsescope/api/) "
          "instead")
    stale = known - set(below)
    assert not stale, (f"{path.name} no longer imports {sorted(stale)}: take them out of "
                       f"NOT_YET_THIN")


def test_not_yet_thin_names_real_modules():
    assert set(NOT_YET_THIN) <= {p.stem for p in COMMAND_MODULES}


@pytest.mark.parametrize("source, expected", [
    ("from sparsescope import api, registry", ["sparsescope.api", "sparsescope.registry"]),
    ("def f():\n    from sparsescope.model.spmv import spmv_traffic",
     ["sparsescope.model.spmv"]),
    ("import sparsescope.results.io", ["sparsescope.results.io"]),
    ("from . import add_json_flag", ["sparsescope.cli.add_json_flag"]),
    ("from .op_options import add_op_options", ["sparsescope.cli.op_options"]),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from sparsescope.hardware.types"
     " import MeasuredCeilings", ["sparsescope.hardware.types"]),
    ("import numpy", []),
])
def test_imports_are_seen(source, expected):
    found = [name for name, _ in _imported_modules(ast.parse(source), "sparsescope.cli.x_cmd")]
    assert found == expected
    assert [_allowed(n) for n in found] == [n.startswith(("sparsescope.api", "sparsescope.cli"))
                                            for n in found]


def test_the_commands_api_is_public_and_frozen():
    from sparsescope import api

    for name in ("show_results", "compare_results", "results_readme", "compact_results",
                 "model_figures", "what_if_matrices", "default_backends", "sass_markdown",
                 "op_entry", "ResultsTable", "Comparison", "RunInfo", "ReadmeOutput",
                 "CompactSummary", "CompactedFile", "ModelFigures", "CaseFigures",
                 "MeasuredCeilings", "TimingConfig"):
        assert name in api.__all__ and hasattr(api, name), name
    for record in (api.ResultsTable, api.Comparison, api.RunInfo, api.ReadmeOutput,
                   api.CompactSummary, api.CompactedFile, api.ModelFigures, api.CaseFigures):
        assert record.__dataclass_params__.frozen, record.__name__
        assert dataclasses.is_dataclass(record)


def test_compare_default_is_the_apis():
    from sparsescope.api.results import DEFAULT_WITHIN
    from sparsescope.cli import results_cmd

    assert results_cmd.DEFAULT_WITHIN == DEFAULT_WITHIN
