"""``sparsescope --help`` ends with every exit code of :data:`sparsescope.errors.EXIT_CODES`,
one a line, in plain text (no reStructuredText markup such as ````--strict````), after the one
way to name a matrix (issue 34, points 4 and 6)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from sparsescope.cli import main
from sparsescope.errors import EXIT_CODES


@pytest.fixture(scope="module")
def top_help() -> str:
    """What ``sparsescope --help`` prints, from the installed entry point's module."""
    proc = subprocess.run([sys.executable, "-m", "sparsescope", "--help"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_every_exit_code_is_in_the_help_with_its_meaning(top_help):
    listed = {}
    tail = top_help[top_help.index("\nExit codes:\n"):]
    for line in tail.splitlines()[2:]:
        match = re.match(r"  (\d+) +(.+)$", line)
        assert match, f"not an exit-code line: {line!r}"
        listed[int(match.group(1))] = match.group(2)
    assert listed == EXIT_CODES
    assert {12, 13, 141, 143} <= set(listed)


def test_the_help_is_plain_text(top_help):
    assert "``" not in top_help and ":data:" not in top_help and ":func:" not in top_help


def test_the_help_names_the_one_matrix_form(top_help):
    text = " ".join(top_help.split())
    assert "suite:NAME[#ENTRY[,ENTRY]][@SCALE] (e.g. suite:seed6#cant@0.05)" in text
    assert "docs/FIRST_STEPS.md" in text


@pytest.mark.parametrize("command, words", [
    ("run", "suite:NAME#ENTRY[,ENTRY][@SCALE]"),
    ("model", "suite:seed6#cant[@SCALE]"),
    ("sweep", "suite:NAME[#ENTRY][@SCALE]"),
    ("profile", "suite:NAME#ENTRY[@SCALE]"),
])
def test_each_matrix_command_names_the_form(capsys, command, words):
    with pytest.raises(SystemExit) as stop:
        main([command, "--help"])
    assert stop.value.code == 0
    assert words in " ".join(capsys.readouterr().out.split())


def test_matrices_stats_help_names_the_form(capsys):
    with pytest.raises(SystemExit):
        main(["matrices", "stats", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "suite:NAME#ENTRY[@SCALE] such as suite:seed6#cant@0.05" in text
