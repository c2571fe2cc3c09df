"""Atomic writes: complete files or untouched ones, never a stray temporary file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ferry.formats import atomic
from ferry.formats.atomic import (
    dumps_json,
    dumps_rows,
    write_files_atomic,
    write_json_atomic,
    write_text_atomic,
)


def test_json_has_two_space_indent_and_a_trailing_newline(tmp_path: Path) -> None:
    target = tmp_path / "x.json"
    write_json_atomic(target, {"b": [1], "a": "é"})
    assert target.read_text(encoding="utf-8") == '{\n  "b": [\n    1\n  ],\n  "a": "é"\n}\n'
    assert dumps_json({"b": [1], "a": "é"}) == target.read_text(encoding="utf-8")


def test_nan_is_refused_rather_than_written_as_invalid_json() -> None:
    with pytest.raises(ValueError):
        dumps_json({"x": float("nan")})


def test_replaces_an_existing_file_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "x.txt"
    target.write_text("old")
    write_text_atomic(target, "new")
    assert target.read_text() == "new"
    assert os.listdir(tmp_path) == ["x.txt"]


def test_new_files_get_the_usual_permissions(tmp_path: Path) -> None:
    target = tmp_path / "x.txt"
    write_text_atomic(target, "new")
    umask = os.umask(0o022)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask


def test_writes_several_files(tmp_path: Path) -> None:
    files = {tmp_path / "a.json": "1\n", tmp_path / "b.json": "2\n"}
    write_files_atomic(files)
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == {"a.json": "1\n", "b.json": "2\n"}
    assert json.loads((tmp_path / "b.json").read_text()) == 2


def test_a_failed_write_leaves_no_file_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.json").write_text("old a")
    real_write_temp = atomic._write_temp
    calls = []

    def fail_on_second(path: Path, text: str, mode: int) -> Path:
        calls.append(path)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real_write_temp(path, text, mode)

    monkeypatch.setattr(atomic, "_write_temp", fail_on_second)
    with pytest.raises(OSError, match="No space left"):
        write_files_atomic(
            {tmp_path / "a.json": "new a", tmp_path / "b.json": "new b", tmp_path / "c.json": "c"}
        )
    # The first temp was written but never renamed: the old file is intact and no temp is left.
    assert sorted(os.listdir(tmp_path)) == ["a.json"]
    assert (tmp_path / "a.json").read_text() == "old a"


def test_missing_directory_is_an_oserror_and_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        write_files_atomic({tmp_path / "a.json": "1", tmp_path / "missing" / "b.json": "2"})
    assert os.listdir(tmp_path) == []


def test_a_directory_in_the_way_is_found_before_any_rename(tmp_path: Path) -> None:
    (tmp_path / "b.json").mkdir()
    with pytest.raises(IsADirectoryError):
        write_files_atomic({tmp_path / "a.json": "1", tmp_path / "b.json": "2"})
    assert os.listdir(tmp_path) == ["b.json"]


def test_rows_put_one_list_item_per_line_and_read_back_the_same() -> None:
    doc = {
        "version": 1,
        "partitions": [{"topic": "é", "partition": 0, "replicas": [1, 2]}, {"t": 2}],
        "empty": [],
    }
    text = dumps_rows(doc)
    assert json.loads(text) == doc
    lines = text.splitlines()
    assert '  {"topic": "é", "partition": 0, "replicas": [1, 2]},' in lines
    assert '  {"t": 2}' in lines and ' "empty": []' in lines and text.endswith("}\n")
