"""The one parser of suite names, ``suite:NAME[#ENTRY[,ENTRY]][@SCALE]`` (issue 34, point 4):
its forms, the old forms as warned aliases, the errors (naming the text, listing the valid
names), and the selections the commands build from it."""

from __future__ import annotations

import warnings

import pytest

from sparsescope.errors import UnknownNameError, UsageError
from sparsescope.matrices import SUITES
from sparsescope.matrices.names import (
    FORM_BARE,
    FORM_CANONICAL,
    FORM_COLON,
    FORM_HASH,
    LISTED_ENTRIES,
    MatrixNameDeprecation,
    SuiteName,
    parse_matrix_name,
)
from sparsescope.matrices.selection import (
    load_named_matrix,
    matrix_selection,
    one_suite_matrix,
    user_matrix_name,
)
from sparsescope.matrices.suites import split_suite_name, suite_entries
from sparsescope.sweep.sources import expand_sources, load_source

SEED6 = "cage15, cant, circuit5M, ldoor, pwtk, webbase-1M"


@pytest.mark.parametrize("text, suite, entries, scale", [
    ("suite:seed6", "seed6", (), None),
    ("suite:seed6#cant", "seed6", ("cant",), None),
    ("suite:seed6#cant, pwtk", "seed6", ("cant", "pwtk"), None),
    ("suite:seed6#cant@0.05", "seed6", ("cant",), 0.05),
    ("suite:seed6@0.05#cant", "seed6", ("cant",), 0.05),  # a sweep's source references
    ("suite:seed6@0.25", "seed6", (), 0.25),
    ("suite:awkward#rmat-257,one-by-one@1", "awkward", ("rmat-257", "one-by-one"), 1.0),
])
def test_the_one_form(text, suite, entries, scale):
    name = parse_matrix_name(text, SUITES)
    assert (name.suite, name.entries, name.scale, name.form) == (suite, entries, scale,
                                                               FORM_CANONICAL)
    assert not name.deprecated
    assert parse_matrix_name(name.canonical, SUITES) == SuiteName(name.canonical, suite,
                                                                  entries, scale)


def test_canonical_text_puts_the_scale_last():
    assert parse_matrix_name("suite:seed6@0.05#cant,pwtk", SUITES).canonical == \
        "suite:seed6#cant,pwtk@0.05"


@pytest.mark.parametrize("text, form, entries", [
    ("seed6#cant", FORM_HASH, ("cant",)),
    ("seed6#pwtk,cant", FORM_HASH, ("pwtk", "cant")),
    ("seed6:cant", FORM_COLON, ("cant",)),
])
def test_old_forms_are_read_and_marked_deprecated(text, form, entries):
    name = parse_matrix_name(text, SUITES)
    assert (name.suite, name.entries, name.form, name.deprecated) == ("seed6", entries, form,
                                                                      True)
    assert name.canonical == "suite:seed6#" + ",".join(entries)


def test_a_file_is_not_a_suite_name(tmp_path, monkeypatch):
    assert parse_matrix_name("a.mtx", SUITES) is None
    assert parse_matrix_name("suitesparse:Williams/cant", SUITES) is None
    assert parse_matrix_name("nope:cant", SUITES) is None      # not a known suite: a file
    assert parse_matrix_name("nope#cant", SUITES) is None
    monkeypatch.chdir(tmp_path)
    (tmp_path / "seed6#cant").write_text("a file of that name wins")
    assert parse_matrix_name("seed6#cant", SUITES) is None
    assert parse_matrix_name("seed6", SUITES) is None          # a bare name is a file here


def test_a_suite_option_reads_bare_names_unknown_ones_included():
    assert parse_matrix_name("seed6", SUITES, suite_option=True).form == FORM_BARE
    unknown = parse_matrix_name("nope#x", SUITES, suite_option=True)
    assert (unknown.suite, unknown.entries, unknown.form) == ("nope", ("x",), FORM_HASH)


@pytest.mark.parametrize("text, message", [
    ("suite:", "no suite name after 'suite:'"),
    ("suite:#cant", "no suite name after 'suite:'"),
    ("suite:seed6#", "an empty entry name after '#'"),
    ("suite:seed6#cant,,pwtk", "an empty entry name after '#'"),
    ("suite:seed6#cant@", "the scale after @ must be a number in (0, 1]"),
    ("suite:seed6#cant@x", "got 'x'"),
    ("suite:seed6#cant@0", "got '0'"),
    ("suite:seed6#cant@1.5", "got '1.5'"),
    ("suite:seed6#cant@nan", "got 'nan'"),
    ("suite:seed6#cant#pwtk", "one #ENTRY list and one @SCALE at most"),
    ("suite:seed6@0.5@0.25", "one #ENTRY list and one @SCALE at most"),
])
def test_malformed_names_are_usage_errors_naming_the_text(text, message):
    with pytest.raises(UsageError) as error:
        parse_matrix_name(text, SUITES)
    assert str(error.value).startswith(f"{text}: ") and message in str(error.value)
    assert error.value.exit_code == 2


def test_unknown_suite_and_entry_name_the_text_and_list_the_valid_names():
    with pytest.raises(UnknownNameError) as error:
        matrix_selection(None, ["suite:seed7#cant"])
    assert str(error.value).startswith("suite:seed7#cant: unknown suite 'seed7'; known: ")
    assert "seed6" in str(error.value) and "awkward" in str(error.value)
    with pytest.raises(UnknownNameError) as error:
        matrix_selection(None, ["suite:seed6#cant,nope@0.5"])
    assert str(error.value) == (f"suite:seed6#cant,nope@0.5: unknown entry of suite 'seed6' "
                                f"'nope'; known: {SEED6}")
    assert "\n" not in str(error.value)


def test_a_large_suite_lists_the_closest_entries_and_the_count():
    assert len(SUITES["population"].entries) > LISTED_ENTRIES
    with pytest.raises(UnknownNameError) as error:
        one_suite_matrix(matrix="suite:population#rmat-2")
    text = str(error.value)
    assert text.startswith("suite:population#rmat-2: unknown entry of suite 'population' "
                           f"'rmat-2'; known: {len(SUITES['population'].entries)} entries "
                           "(closest: rmat-")
    assert text.endswith("every one: `sparsescope matrices list`)")


def test_user_names_warn_once_for_an_old_form_only():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        user_matrix_name("suite:seed6#cant")
        user_matrix_name("seed6", suite_option=True)
        assert caught == []
        user_matrix_name("seed6:cant")
    assert len(caught) == 1 and caught[0].category is MatrixNameDeprecation
    assert str(caught[0].message) == ("'seed6:cant' is an old form of a suite matrix's name "
                                      "(NAME:ENTRY); write 'suite:seed6#cant' "
                                      "(suite:NAME#ENTRY[@SCALE], the one form every command "
                                      "takes)")


def test_the_library_parses_through_the_same_function_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert split_suite_name("suite:seed6#cant,pwtk") == ("seed6", ("cant", "pwtk"))
        assert split_suite_name("seed6#pwtk, cant") == ("seed6", ("pwtk", "cant"))
        assert [e.name for e in suite_entries("suite:seed6#ldoor", 0.5)] == ["ldoor"]
    with pytest.raises(UsageError, match="give the scale as the scale argument"):
        suite_entries("suite:seed6#cant@0.5")


# -- what the commands build from the names -----------------------------------------------------
def test_selection_of_a_suite_option_its_entries_and_scale():
    chosen = matrix_selection("suite:seed6#cant,pwtk@0.05")
    assert (chosen.suite, chosen.entries, chosen.files, chosen.scale) == \
        ("seed6", ("cant", "pwtk"), (), 0.05)
    assert chosen.suite_arg == "seed6#cant,pwtk"
    assert matrix_selection("seed6", scale=0.5).suite_arg == "seed6"
    assert matrix_selection("seed6", scale=0.5).scale == 0.5


def test_selection_of_matrix_names_merges_one_suite():
    chosen = matrix_selection(None, ["suite:seed6#cant@0.05", "suite:seed6#pwtk,cant"])
    assert (chosen.suite, chosen.entries, chosen.scale) == ("seed6", ("cant", "pwtk"), 0.05)
    whole = matrix_selection(None, ["suite:seed6#cant", "suite:seed6"])
    assert (whole.suite, whole.entries) == ("seed6", ())          # the whole suite wins
    picked = matrix_selection("suite:awkward", entries=["rmat-257", "one-col"])  # model --matrix
    assert picked.suite_arg == "awkward#rmat-257,one-col"


def test_selection_of_files_is_left_to_the_readers():
    chosen = matrix_selection(None, ["a.mtx", "suitesparse:Williams/cant"], scale=0.5)
    assert (chosen.suite, chosen.files, chosen.scale) == \
        (None, ("a.mtx", "suitesparse:Williams/cant"), 0.5)


@pytest.mark.parametrize("suite, matrices, entries, message", [
    (None, ["suite:seed6#cant", "a.mtx"], (), "suite matrices and files in one command"),
    (None, ["suite:seed6#cant", "suite:awkward#one-col"], (), "matrices of 2 suites"),
    (None, ["suite:seed6#cant@0.5", "suite:seed6#pwtk@0.25"], (), "different @SCALEs"),
    (None, ["a.mtx"], ("cant",), "--matrix cant names an entry of a suite"),
])
def test_selection_refuses_what_one_command_cannot_record(suite, matrices, entries, message):
    with pytest.raises(UsageError, match=message):
        matrix_selection(suite, matrices, entries=entries)


def test_a_name_scale_and_a_different_option_scale_disagree():
    with pytest.raises(UsageError, match=r"its @0.05 and --scale 0.5 disagree"):
        matrix_selection("suite:seed6@0.05", scale=0.5)
    assert matrix_selection("suite:seed6@0.05", scale=0.05).scale == 0.05
    assert matrix_selection("suite:seed6@0.05", scale=1.0).scale == 0.05  # the default


@pytest.mark.parametrize("suite, matrix, expected", [
    (None, "suite:seed6#cant@0.05", ("seed6", "cant", 0.05)),
    ("suite:seed6#cant@0.05", None, ("seed6", "cant", 0.05)),
    ("seed6", "cant", ("seed6", "cant", 1.0)),                  # profile's separate options
    ("suite:seed6@0.25", "cant", ("seed6", "cant", 0.25)),
])
def test_one_suite_matrix(suite, matrix, expected):
    one = one_suite_matrix(suite, matrix)
    assert (one.suite, one.entry, one.scale) == expected


@pytest.mark.parametrize("suite, matrix, message", [
    (None, "suite:seed6", f"names no entry of suite seed6; one matrix is wanted: "
                          f"suite:seed6#ENTRY (entries: {SEED6})"),
    (None, "suite:seed6#cant,pwtk", "names 2 entries of suite seed6"),
    ("seed6", "suite:seed6#cant", "name the matrix once"),
    ("suite:seed6#cant", "pwtk", "already names its entries"),
])
def test_one_suite_matrix_wants_exactly_one(suite, matrix, message):
    with pytest.raises(UsageError) as error:
        one_suite_matrix(suite, matrix)
    assert message in str(error.value)


def test_load_named_matrix_builds_the_entry_at_its_scale():
    matrix = load_named_matrix("suite:seed6#cant@0.002")
    assert (matrix.name, matrix.rows, matrix.nnz, matrix.analog_of) == ("cant", 125, 8021,
                                                                        "cant")
    assert load_named_matrix("suite:seed6#cant", scale=0.002).nnz == 8021


def test_sweep_sources_of_the_one_form_and_the_old_ones():
    sources = expand_sources(["suite:awkward#rmat-257,one-by-one@1"])
    assert [(s.name, s.ref) for s in sources] == [
        ("rmat-257", "suite:awkward@1.0#rmat-257"), ("one-by-one", "suite:awkward@1.0#one-by-one")]
    assert load_source(sources[0]).nnz == 3000
    with pytest.warns(MatrixNameDeprecation, match="'awkward:rmat-257' is an old form"):
        (alias,) = expand_sources(["awkward:rmat-257"])
    assert alias == sources[0]
    scaled = expand_sources(["suite:seed6#cant@0.002"])
    assert scaled[0].ref == "suite:seed6@0.002#cant" and load_source(scaled[0]).nnz == 8021
    with pytest.raises(UnknownNameError, match="suite:awkward#nope: unknown entry of suite "
                                               "'awkward' 'nope'; known: banded-1001"):
        expand_sources(["suite:awkward#nope"])
