"""The transition tables: properties over every pair of states (Hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ferry.execute.states import (
    REQUEST_TRANSITIONS,
    TASK_TRANSITIONS,
    IllegalTransition,
    RequestState,
    TaskState,
    check_request_transition,
    check_task_transition,
)

FINAL_TASK_STATES = {TaskState.DONE, TaskState.CANCELLED, TaskState.FAILED}


def test_tables_cover_every_state() -> None:
    assert set(TASK_TRANSITIONS) == set(TaskState)
    assert set(REQUEST_TRANSITIONS) == set(RequestState)


def test_the_issue_s_happy_path_is_allowed() -> None:
    check_task_transition(TaskState.PENDING, TaskState.SUBMITTED, "t")
    for end in FINAL_TASK_STATES:
        check_task_transition(TaskState.SUBMITTED, end, "t")


@given(st.sampled_from(TaskState), st.sampled_from(TaskState))
def test_task_check_agrees_with_the_table(current: TaskState, new: TaskState) -> None:
    if new in TASK_TRANSITIONS[current]:
        check_task_transition(current, new, "t")
    else:
        with pytest.raises(IllegalTransition, match=f"illegal task transition {current} -> {new}"):
            check_task_transition(current, new, "t")


@given(st.sampled_from(RequestState), st.sampled_from(RequestState))
def test_request_check_agrees_with_the_table(current: RequestState, new: RequestState) -> None:
    if new in REQUEST_TRANSITIONS[current]:
        check_request_transition(current, new, "r")
    else:
        with pytest.raises(IllegalTransition):
            check_request_transition(current, new, "r")


@given(st.lists(st.sampled_from(TaskState), max_size=12))
def test_any_legal_walk_is_short_and_never_leaves_a_final_state(walk: list[TaskState]) -> None:
    """Following only legal steps from pending, a task ends within two steps and then stays put."""
    state = TaskState.PENDING
    steps = 0
    for new in walk:
        if new in TASK_TRANSITIONS[state]:
            state = new
            steps += 1
    assert steps <= 2
    assert state.is_final == (state in FINAL_TASK_STATES)


def test_no_self_loops_and_no_way_back_to_pending() -> None:
    for current, allowed in TASK_TRANSITIONS.items():
        assert current not in allowed
        assert TaskState.PENDING not in allowed
    for current, allowed in REQUEST_TRANSITIONS.items():
        assert current not in allowed
        assert RequestState.RECORDED not in allowed
