"""Reading the control topic's fetch answers: the records from the fetch offset on, and where the
next fetch starts."""

from __future__ import annotations

from kafka.record import MemoryRecordsBuilder

from ferry.kafka.client.control_log import Record, _records


def _batch(base: int, values: list[bytes]) -> bytes:
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 16, offset=base)
    for n, value in enumerate(values):
        builder.append(timestamp=1_000 + n, key=b"freeze", value=value)
    builder.close()
    return bytes(builder.buffer())


def test_every_record_of_every_batch_is_read_and_the_next_offset_follows_the_last() -> None:
    found: list[Record] = []
    data = _batch(0, [b"a", b"b"]) + _batch(2, [b"c"])
    assert _records(data, found, 0) == 3
    assert [(r.offset, r.value) for r in found] == [(0, b"a"), (1, b"b"), (2, b"c")]
    assert found[0] == Record(0, b"freeze", b"a", 1_000)


def test_records_before_the_fetch_offset_in_a_whole_batch_are_not_read_twice() -> None:
    # A broker returns whole batches: one that starts before the offset asked carries records
    # the previous fetch already read.
    found: list[Record] = []
    assert _records(_batch(5, [b"x", b"y", b"z"]), found, 6) == 8
    assert [r.offset for r in found] == [6, 7]


def test_an_empty_answer_leaves_the_offset() -> None:
    found: list[Record] = []
    assert _records(b"", found, 4) == 4
    assert _records(None, found, 4) == 4
    assert found == []
