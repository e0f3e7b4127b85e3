"""Help and list texts shown whole: ``matrices list`` generator descriptions, ``model --help``.

(The ``model --help`` test lives here because this change was scoped to tests/matrices and
tests/sass; it belongs with the CLI tests.)
"""

from __future__ import annotations

import json

import pytest
from _matrices_helpers import cli

from sparsescope.cli import main
from sparsescope.cli.matrices_cmd import LIST_WIDTH
from sparsescope.matrices.generators import GENERATORS, generator_summary

PRUNED = ("Pruned-DNN-like: Gaussian row lengths (mean nnz / rows, std ``row_std``), uniform "
          "distinct columns.")


def test_generator_summary_joins_a_wrapped_first_paragraph():
    assert generator_summary("pruned") == PRUNED
    assert generator_summary("uniform") == ("Uniform random: multinomial row lengths, uniform "
                                            "distinct sorted columns per row.")
    for kind in GENERATORS:
        assert generator_summary(kind).endswith(".")  # every one is a whole sentence


def test_matrices_list_shows_every_description_whole(capsys):
    rc, out, err = cli(["list"], capsys)
    assert rc == 0 and "Traceback" not in err
    block = out.split("Generators:\n", 1)[1].splitlines()
    assert all(len(line) <= LIST_WIDTH for line in block)
    start = next(i for i, line in enumerate(block) if line.startswith("  pruned "))
    shown = []
    for line in block[start:]:
        if line.strip().startswith("("):
            break
        shown.append(line.strip())
    assert " ".join(" ".join(shown).split()) == "pruned " + PRUNED
    assert block[start + len(shown)].strip() == "(row_std=0.0)"
    rc, out, _ = cli(["list", "--json"], capsys)
    generators = {g["name"]: g["summary"] for g in json.loads(out)["generators"]}
    assert rc == 0 and generators["pruned"] == PRUNED


def test_model_help_shows_a_single_percent_sign(capsys):
    with pytest.raises(SystemExit) as info:
        main(["model", "--help"], modules=["sparsescope.cli.model_cmd"])
    out, err = capsys.readouterr()
    assert info.value.code == 0 and "Traceback" not in err
    assert "%%" not in out
    assert "effective bandwidth, % of peak and gap." in " ".join(out.split())
