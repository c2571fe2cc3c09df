"""Demo data for scripts/demo: topics placed on brokers 1-4 only (5 and 6 are new), with real bytes.

Run with the project's virtualenv: ``.venv/bin/python scripts/demo_data.py HOST:PORT``. It uses
kafka-python directly, as an operator's producers would; ferry itself reads the cluster through
``ferry.kafka`` only.
"""

from __future__ import annotations

import os
import sys

from kafka.admin import KafkaAdminClient
from kafka.producer import KafkaProducer

# Racks alternate r0, r1, r0, r1, ... so brokers 1 and 3 are in r0, 2 and 4 in r1.
OLD = (1, 2, 3, 4)
TOPICS = {"orders": (12, 3, 6_000_000), "payments": (6, 2, 3_000_000), "audit": (3, 3, 1_500_000)}


def assignments(partitions: int, rf: int) -> dict[int, list[int]]:
    """Replicas on the old brokers only, spread round robin (alternating racks)."""
    return {p: [OLD[(p + i) % len(OLD)] for i in range(rf)] for p in range(partitions)}


def main(bootstrap: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)
    try:
        admin.create_topics(
            {name: {"assignments": assignments(n, rf)} for name, (n, rf, _) in TOPICS.items()},
            timeout_ms=15000,
        )
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    try:
        for name, (_, _, total) in TOPICS.items():
            for _ in range(total // 10_000):
                producer.send(name, os.urandom(10_000))
        producer.flush(timeout=60)
    finally:
        producer.close(timeout=10)
    sizes = ", ".join(f"{name} {total / 1e6:.1f} MB" for name, (_, _, total) in TOPICS.items())
    print(f"demo data: {sizes} on brokers {', '.join(map(str, OLD))}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1])
