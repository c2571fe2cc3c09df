"""The collector pause restores what it found, however the block ends."""

from __future__ import annotations

import gc

import pytest

from ferry.plan.gc_pause import paused, pausing


def test_paused_blocks_restore_the_collector_even_after_an_error() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError), paused():
        assert not gc.isenabled()
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_pause_inside_a_pause_leaves_it_paused_and_an_off_collector_stays_off() -> None:
    with paused():
        with paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_pausing_runs_the_function_paused_and_keeps_its_result() -> None:
    @pausing
    def state() -> bool:
        return gc.isenabled()

    assert state() is False and gc.isenabled()
