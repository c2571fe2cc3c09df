"""The fault-injection harness: clients' data and the cluster's state under faults at random moments.

One run (:mod:`.run`) writes sequence-numbered messages to a few RF 3 topics while a ferry scenario
(:mod:`.scenario`: execute then cancel, rollback of a finished request, a re-target) moves their
partitions under a throttle, injects one fault (:mod:`.inject`: kill -9 of ferry, a broker killed
or paused, the quorum leader killed) at a moment drawn from a seed, heals it, resumes what ferry
left unfinished, and checks (:mod:`.check`) that every acknowledged message was consumed exactly
once and that the cluster, its throttle configs and ferry's journal agree. benchmarks/faults.py
runs many; tests/integration/test_faults_kafka.py runs one per fault kind.
"""
