"""What stays in ``scripts/`` uses the product as a user would: through ``sparsescope.api`` or
the ``sparsescope`` command, never a private name, never ``sys.path``.

Every ``scripts/*.py`` is parsed with :mod:`ast` (nothing is run) and fails on

- any use of ``sys.path`` (``sys.path.insert``, ``from sys import path``): the package is
  installed, so a script needs no path of its own;
- an import of a ``sparsescope`` module other than ``sparsescope.api``;
- an imported name, or an attribute read off ``sparsescope.api``, that starts with ``_``.

Shell scripts (``scripts/*.sh``, whose heredocs run Python) may import ``sparsescope.api``
only, the same way.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
PUBLIC = "sparsescope.api"


def _private(name: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__")
               for part in name.split("."))


def violations(source: str) -> list[str]:
    """Each rule ``source`` breaks, with its line."""
    tree = ast.parse(source)
    found = []
    api_names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "sparsescope" or alias.name.startswith("sparsescope."):
                    if alias.name != PUBLIC:
                        found.append(f"line {node.lineno}: import {alias.name}")
                    elif alias.asname:
                        api_names.add(alias.asname)
                    else:
                        api_names.add("sparsescope")
                if _private(alias.name) and alias.name.split(".")[0] != "__future__":
                    found.append(f"line {node.lineno}: import of private {alias.name}")
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                found.append(f"line {node.lineno}: relative import")
            if module == "sys" and any(a.name == "path" for a in node.names):
                found.append(f"line {node.lineno}: from sys import path")
            if module == "sparsescope":
                bad = [a.name for a in node.names if a.name != "api"]
                if bad:
                    found.append(f"line {node.lineno}: from sparsescope import {', '.join(bad)}")
                api_names.update(a.asname or a.name for a in node.names if a.name == "api")
            elif module.startswith("sparsescope.") and module != PUBLIC:
                found.append(f"line {node.lineno}: from {module} import ...")
            if module.split(".")[0] != "__future__":
                for alias in node.names:
                    if alias.name.startswith("_"):
                        found.append(f"line {node.lineno}: imports private {alias.name}")
        elif isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and (node.value.id, node.attr) == ("sys", "path"):
                found.append(f"line {node.lineno}: sys.path")
    for node in ast.walk(tree):  # attributes read off the API module: public ones only
        if isinstance(node, ast.Attribute) and _private(node.attr):
            chain, base = [node.attr], node.value
            while isinstance(base, ast.Attribute):
                chain.append(base.attr)
                base = base.value
            if isinstance(base, ast.Name) and base.id in api_names:
                found.append(f"line {node.lineno}: {'.'.join([base.id, *reversed(chain)])}")
    return found


@pytest.mark.parametrize("path", sorted(SCRIPTS.glob("*.py")), ids=lambda p: p.name)
def test_python_scripts_use_the_public_api_only(path):
    found = violations(path.read_text())
    assert not found, f"{path.name}: " + "; ".join(found)


@pytest.mark.parametrize("path", sorted(SCRIPTS.glob("*.sh")), ids=lambda p: p.name)
def test_shell_scripts_import_the_public_api_only(path):
    text = path.read_text()
    bad = [m.group(0) for m in re.finditer(r"(?:from|import)\s+sparsescope\.[\w.]+", text)
           if not m.group(0).endswith(f" {PUBLIC}")]
    assert not bad, f"{path.name}: {bad}"
    assert "sys.path" not in text


@pytest.mark.parametrize("source, rule", [
    ("import sys\nsys.path.insert(0, 'src')\n", "sys.path"),
    ("from sys import path\n", "from sys import path"),
    ("from sparsescope.whatif import predict_case\n", "from sparsescope.whatif"),
    ("import sparsescope.report.collection_data\n", "import sparsescope.report"),
    ("from sparsescope import whatif\n", "from sparsescope import whatif"),
    ("from sparsescope.api import _device\n", "imports private _device"),
    ("import sparsescope.api as api\napi._device('x')\n", "api._device"),
    ("from sparsescope import api\napi.sweeps._x\n", "api.sweeps._x"),
])
def test_the_check_catches(source, rule):
    assert any(rule in v for v in violations(source))


def test_the_check_passes_public_use():
    assert violations("from __future__ import annotations\nimport sys\n"
                      "from sparsescope.api import read_runset, score_runs\n"
                      "import sparsescope.api as api\napi.run\nsys.exit(0)\n") == []


def test_every_public_name_the_scripts_use_is_in_the_api():
    import sparsescope.api as api

    for path in SCRIPTS.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == PUBLIC:
                for alias in node.names:
                    assert hasattr(api, alias.name), f"{path.name}: sparsescope.api.{alias.name}"
