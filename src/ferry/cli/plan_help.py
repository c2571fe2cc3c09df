"""What ``ferry plan --help`` says: its description, its examples and the help of ``--force``."""

DESCRIPTION = """\
Plan a partition reassignment from a cluster snapshot (a file, or one taken from a live cluster
with --bootstrap-server), moving as few replicas as balance requires: replicas end evenly spread
over the target brokers, never two replicas of a partition in one rack (or on one broker),
preferred leaders evenly spread. The cluster is never changed.

Writes DIR/reassignment.json (the partitions that change, in the JSON format of Kafka's
kafka-reassign-partitions.sh), DIR/rollback.json (their current replicas) and DIR/report.json
(moves, bytes, lower bound, balance before and after); with --bootstrap-server also
DIR/snapshot.json, the snapshot the plan was made from. A broker that is down (alive: false in
the snapshot) never receives replicas: plan it away with --remove-brokers.

With --bootstrap-server the plan also passes the safety checks 'ferry execute' runs before it
submits: no move may leave a partition with fewer replicas than its topic's min.insync.replicas,
and none may go onto a broker that is not alive (liveness is read again once the plan is made).
A plan that fails them is refused (exit 4, one line naming the partition and why) and nothing is
written, not even snapshot.json, unless --force REASON is given: then the plan is written and
report.json records the reason and the checks it overrode ("forced"). A snapshot file
(--snapshot, --fleet, --example) holds no live state, so offline plans are not checked."""

EPILOG = """\
examples:
  rebalance onto every broker of the snapshot, e.g. after adding brokers 7 and 8:
    ferry plan --snapshot snapshot.json --output-dir out
  decommission brokers 4 and 5:
    ferry plan --snapshot snapshot.json --remove-brokers 4,5 --output-dir out
  the same, straight from a live cluster (snapshot saved as out/snapshot.json):
    ferry plan --bootstrap-server 127.0.0.1:9092 --remove-brokers 4,5 --output-dir out
  write a live plan the safety checks refuse, saying why (kept in report.json):
    ferry plan --bootstrap-server 127.0.0.1:9092 --replication-factor logs=1 \\
        --force 'logs is scratch data' --output-dir out
  with TLS or SASL, the client properties file Kafka's own tools take:
    ferry plan --bootstrap-server kafka1:9093 --command-config client.properties --output-dir out
  move everything from broker 3 to broker 9 and nothing else:
    ferry plan --snapshot snapshot.json --replace 3=9 --output-dir out
  raise orders to 3 replicas, planning only that topic:
    ferry plan --snapshot snapshot.json --topics orders --replication-factor orders=3 \\
        --output-dir out
  try it on the bundled example (8 brokers, 2 of them new):
    ferry plan --example --output-dir out
  plan every snapshot of a folder in one Spark job (OUT/<cluster>/ per cluster + a summary):
    ferry plan --fleet snapshots/ --output-dir out
  even the disks rather than replica counts, each broker to the same fraction of its capacity:
    ferry plan --snapshot snapshot.json --balance bytes --capacity disks.json --output-dir out
  plan without Spark, in this process:
    ferry plan --snapshot snapshot.json --engine local --output-dir out
  even out the bytes across the log dirs inside each broker (JBOD; a live snapshot lists them):
    ferry plan --bootstrap-server 127.0.0.1:9092 --disks balance --output-dir out
  empty one log dir of broker 3 into its other dirs (or other brokers where they lack room):
    ferry plan --bootstrap-server 127.0.0.1:9092 --evacuate-dir 3:/data/b --output-dir out"""


FORCE_HELP = (
    "with --bootstrap-server: write the plan even if the safety checks refuse it (below "
    "min.insync.replicas, onto a broker that is not alive); REASON and the refusals it "
    'overrode go into report.json as "forced"'
)
