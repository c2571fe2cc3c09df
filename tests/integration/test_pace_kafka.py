"""``ferry execute --pace auto`` on the real cluster: a move started far under its partition's
produce rate, which a static throttle at that rate would never finish, completes; no
acknowledged message is lost and no throttle is left."""

from __future__ import annotations

from pathlib import Path

from ferry_process import executing, write_plan
from kafka_helpers import create_topics, produce, producing, wait_until
from support.fault_harness.load import FILL, SequencedLoad

from ferry.execute.journal import Journal
from ferry.execute.pace.controller import FLOOR_FACTOR, Role, State
from ferry.execute.progress import THROTTLE_SHARE
from ferry.execute.states import RequestState
from ferry.execute.throttles import FOLLOWER_RATE, FOLLOWER_REPLICAS, LEADER_RATE, LEADER_REPLICAS
from ferry.kafka.client import KafkaPythonAdmin
from ferry.kafka.resources import ConfigKey, ResourceType

TOPIC = "pace-hot"
PRODUCE = 400_000  # bytes/s written into the moving partition while it moves
START = 50_000  # bytes/s: an eighth of that. Kafka lets a follower fetch up to 1 MB at once, then
# holds it back until its 11-second rate is under the throttle: about 90 kB/s at most here.


def test_a_move_started_far_under_its_produce_rate_completes_under_pace_auto(
    bootstrap: str, admin: KafkaPythonAdmin, tmp_path: Path
) -> None:
    create_topics(bootstrap, {TOPIC: {"assignments": {0: [1, 2]}}})
    produce(bootstrap, TOPIC, 5_000_000, prefix=FILL)  # data to copy, not counted by the load
    load = SequencedLoad(bootstrap, [TOPIC])
    load.start()
    journal_path = tmp_path / "journal.sqlite"
    plan = write_plan(tmp_path / "plan.json", TOPIC, {0: [3, 4]})
    options = ("--throttle", str(START), "--pace", "auto", "--pace-period", "3", "--wait")
    try:
        with (
            producing(bootstrap, TOPIC, PRODUCE, prefix=FILL),
            executing(plan, bootstrap, journal_path, *options) as run,
        ):
            code = run.wait(timeout=240)
            err = run.stderr.read() if run.stderr else ""
    finally:
        tally = load.stop()
    assert code == 0, err
    assert tally.lost == 0 and tally.acked > 100, (tally, load.errors)
    with Journal.open(journal_path) as journal:
        request = journal.requests()[-1]
        assert request.state is RequestState.DONE
        paced = journal.pace_records(request.id)
    floors = [r for r in paced if (r.broker, r.role) == (3, Role.FOLLOWER) and r.state == State.FLOOR]
    assert floors, [(r.broker, r.role, r.rate, r.state, r.reason) for r in paced]
    # The floor: a copy at 1.2 x the produce rate measured, over the share of its throttle a
    # broker sustains; far over the starting rate it replaced.
    first = floors[0]
    assert first.produce is not None and 0.7 * PRODUCE < first.produce < 1.5 * PRODUCE
    assert first.rate == int(FLOOR_FACTOR * first.produce / THROTTLE_SHARE) > START
    assert "(floor: produce rate" in err, err
    keys = [
        ConfigKey(ResourceType.BROKER, str(b), k) for b in (1, 2, 3, 4) for k in (LEADER_RATE, FOLLOWER_RATE)
    ]
    keys += [ConfigKey(ResourceType.TOPIC, TOPIC, k) for k in (LEADER_REPLICAS, FOLLOWER_REPLICAS)]
    wait_until(lambda: admin.describe_throttle_configs(keys) == {}, 15, "every throttle removed")
