"""The README a newcomer follows (issue 34, points 5 and 6): every exit code the source sets is
in its table, every relative link resolves to a file of the repository, the set-up keeps the
test command CI reads, and the extras it documents are pyproject's, with ``sweep`` free of
dask-cuda."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

from sparsescope.errors import EXIT_CODES

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: Pages a newcomer is sent to from the README; their links are checked too.
PAGES = [README, ROOT / "docs" / "FIRST_STEPS.md", ROOT / "docs" / "SEEDS.md"]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _section(text: str, heading: str) -> str:
    """The body of ``## heading`` up to the next ``## ``."""
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def _codes_set_in_source() -> set[int]:
    """Every exit code the source sets: ``exit_code = N`` (a class attribute or an error's
    attribute) and ``EXIT_* = N`` anywhere under src/, read with ast (nothing imported)."""
    codes: set[int] = set()
    for path in (ROOT / "src" / "sparsescope").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if "exit_code" not in text and "EXIT_" not in text:
            continue  # parse only the modules that can set one
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Constant):
                continue
            for target in node.targets:
                name = (target.id if isinstance(target, ast.Name)
                        else target.attr if isinstance(target, ast.Attribute) else "")
                if (name == "exit_code" or name.startswith("EXIT_")) and \
                        isinstance(node.value.value, int):
                    codes.add(node.value.value)
    return codes


def test_the_table_holds_every_code_the_source_sets():
    found = _codes_set_in_source()
    assert {12, 13, 141, 143} <= found  # the ones the README used to miss
    assert found <= set(EXIT_CODES), f"codes set but not documented: {found - set(EXIT_CODES)}"
    assert list(EXIT_CODES) == sorted(EXIT_CODES)


def test_readme_lists_every_exit_code_with_its_meaning():
    rows = {}
    for line in _section(README.read_text(encoding="utf-8"), "Exit codes").splitlines():
        match = re.match(r"\| (\d+) \| (.+) \|$", line)
        if match:
            rows[int(match.group(1))] = match.group(2).replace("\\|", "|")
    assert rows == EXIT_CODES


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves_to_a_file_of_the_repository(page):
    links = [target for target in LINK.findall(page.read_text(encoding="utf-8"))
             if not re.match(r"[a-z]+:", target) and not target.startswith("#")]
    assert links, f"{page.name} links nothing"
    for target in links:
        path = (page.parent / target.split("#")[0]).resolve()
        assert path.is_file(), f"{page.relative_to(ROOT)}: link {target} resolves to no file"
        assert ROOT in path.parents, f"{page.relative_to(ROOT)}: {target} leaves the repository"


def test_readme_points_to_docs_that_exist():
    text = README.read_text(encoding="utf-8")
    assert "DESIGN.md" not in text
    for doc in ("docs/ARCHITECTURE.md", "docs/FIRST_STEPS.md", "docs/PLUGINS.md",
                "docs/SEEDS.md"):
        assert f"]({doc})" in text, doc


def test_the_test_command_ci_reads_is_still_there():
    """.ci/run takes the first ``pip install`` line after the line starting "Run the tests"."""
    lines = README.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Run the tests"))
    command = next(line for line in lines[start:] if line.startswith("pip install"))
    assert command == ("pip install -q -e '.[dev,profile]' && python -m pytest -q -n auto "
                       "--dist worksteal")
    assert "pip install -e . && sparsescope run --suite seed6 --scale 0.05 --out out/seed6" in lines


def test_setup_names_the_python_version_and_a_venv():
    setup = _section(README.read_text(encoding="utf-8"), "Set-up: two commands on a fresh machine")
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert requires == ">=3.11" and "Python 3.11 or newer" in setup
    assert "python3 -m venv .venv && . .venv/bin/activate" in setup


def test_readme_says_what_the_seeds_are_and_names_the_source():
    seeds = _section(README.read_text(encoding="utf-8"), "What the seed analyses are")
    for words in ("hand-written", "seed 000", "seed 003", "seed 004", "the seed report",
                  "baseline", "tests/fixtures/seeds/000_8d58fe80a532de4b.txt"):
        assert words.lower() in seeds.lower(), words
    assert (ROOT / "tests" / "fixtures" / "seeds" / "000_8d58fe80a532de4b.txt").is_file()


def test_extras_match_pyproject_and_sweep_pulls_no_dask_cuda():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    table = _section(README.read_text(encoding="utf-8"), "Extras: what to install on which machine")
    documented = set(re.findall(r"^\| `([a-z0-9-]+)` \|", table, flags=re.M))
    assert documented == set(extras)

    def names(extra: str) -> set[str]:
        return {re.split(r"[<>=\[ ;]", req, maxsplit=1)[0].lower() for req in extras[extra]}

    assert "dask-cuda" not in names("sweep") and "distributed" in names("sweep")
    assert {"dask-cuda", "distributed"} <= names("sweep-cuda")
    assert not any("<" in req for req in extras["sweep"])  # never moves an installed Dask back
    assert "nvmath-python" in names("nvmath")
    assert all("nvmath" not in name and "dask-cuda" not in name
               for extra in ("dev", "profile", "sweep") for name in names(extra))


def test_sweep_cuda_floors_sit_at_the_dask_dask_cuda_pins():
    """dask-cuda 26.8 and 26.10 pin dask and distributed 2026.7.1 (rapids-dask-dependency):
    sweep-cuda's distributed floor is that pin, so pip never backtracks to an old dask-cuda."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert sorted(extras["sweep-cuda"]) == ["dask-cuda>=26.8", "distributed>=2026.7.1"]


@pytest.mark.usefixtures("cpu_ceilings_measured_once")
def test_cluster_cuda_without_dask_cuda_names_the_sweep_cuda_extra(tmp_path, capsys,
                                                                   monkeypatch):
    """The extra the README sends a GPU user to is the one the error names (exit 6)."""
    import importlib.util

    from sparsescope.cli import main

    if importlib.util.find_spec("dask_cuda") is not None:
        pytest.skip("dask-cuda is installed here: --cluster cuda would start")
    if importlib.util.find_spec("distributed") is None:
        pytest.skip("Dask is not installed: the sweep extra's own error comes first")
    monkeypatch.setenv("SPARSESCOPE_STORE", str(tmp_path / "store.sqlite"))
    rc = main(["sweep", "suite:awkward#one-by-one", "--cluster", "cuda", "--backend",
               "scipy-cpu", "--out", str(tmp_path / "o"), "--no-store"],
              modules=["sparsescope.cli.sweep_cmd"])
    err = capsys.readouterr().err
    assert rc == 6
    assert "dask_cuda is not installed (needed for --cluster cuda); install it with: pip install " \
           "'sparsescope[sweep-cuda]'" in err
