"""The --capacity file: broker ids to bytes, every problem named by file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from ferry.errors import InputError
from ferry.formats.capacity_json import load_capacity, parse_capacity


def test_a_capacity_file_maps_broker_ids_to_bytes(tmp_path: Path) -> None:
    path = tmp_path / "disks.json"
    path.write_text('{"1": 2000000000000, "2": 4000000000000}')
    assert load_capacity(path) == {1: 2_000_000_000_000, 2: 4_000_000_000_000}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[1, 2]", "d.json: expected a JSON object of broker id to bytes"),
        ("{}", "d.json: no broker listed"),
        ('{"x": 10}', "d.json: x: expected a broker id as the key"),
        ('{"-1": 10}', "d.json: -1: expected a broker id as the key"),
        ('{"1": 0}', "d.json: 1:"),
        ('{"1": -5}', "d.json: 1:"),
        ('{"1": "10"}', "d.json: 1:"),
        ('{"1": 1.5}', "d.json: 1:"),
        ('{"1": 10', "d.json"),
    ],
)
def test_a_bad_capacity_file_names_the_file_and_the_key(text: str, expected: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_capacity(text, "d.json")
    assert str(caught.value).startswith(expected)


def test_every_bad_key_is_listed() -> None:
    with pytest.raises(InputError) as caught:
        parse_capacity('{"a": 1, "2": 0, "3": 7}', "d.json")
    assert str(caught.value) == "d.json: a: expected a broker id as the key (and 1 more)"
    assert caught.value.problems[1].startswith("d.json: 2:")
    assert len(caught.value.problems) == 2


def test_a_missing_capacity_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nope\.json"):
        load_capacity(tmp_path / "nope.json")
