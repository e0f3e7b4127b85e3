"""Atomic writes: the old file survives a failed write; new files get the umask's mode."""

from __future__ import annotations

import os

import pytest

from sparsescope import _atomic


def test_old_file_survives_failed_json_write(tmp_path):
    target = tmp_path / "results.json"
    _atomic.write_json_atomic(target, {"a": 1})
    with pytest.raises(TypeError):
        _atomic.write_json_atomic(target, {"a": object()})  # not serialisable
    assert target.read_text() == '{\n  "a": 1\n}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]  # no temp file left


def test_mode_follows_umask(tmp_path):
    old = os.umask(0o022)
    try:
        path = _atomic.write_text_atomic(tmp_path / "sub" / "r.md", "x")
    finally:
        os.umask(old)
    assert path.read_text() == "x"
    assert oct(path.stat().st_mode & 0o777) == "0o644"
