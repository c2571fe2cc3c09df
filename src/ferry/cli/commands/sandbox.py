"""``ferry sandbox``: a local KRaft cluster from the official Kafka jars, for trials and tests.

``up`` prints only the bootstrap address on stdout (``BS=$(ferry sandbox up)`` works); progress and
timings go to stderr.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from ferry.errors import KafkaError, UsageError
from ferry.kafka.client import KafkaPythonAdmin, ready_brokers
from ferry.kafka.config import ClientSettings
from ferry.kafka.resources import ConfigKey, ResourceType
from ferry.sandbox import SCRAM_USERS, ClusterSpec, Sandbox, default_sandbox_dir, ensure_jars

CORDONED_DIRS = "cordoned.log.dirs"
"""The broker config that cordons log dirs (a list, or ``*`` for all of them; KIP-1066)."""
CORDON_WAIT_S = 30.0


def register(subparsers: Any) -> None:
    """Add ``sandbox`` and its sub-commands to the ``ferry`` parser."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="sandbox state folder (default $FERRY_SANDBOX_DIR or ~/.cache/kafka-ferry/sandbox)",
    )
    parser = subparsers.add_parser("sandbox", help="run a local Kafka cluster for trying ferry")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=type(parser))
    verbs.required = True
    _add_up(verbs, common)
    status = verbs.add_parser("status", parents=[common], help="show nodes, pids and ports")
    status.set_defaults(func=_status)
    kill = verbs.add_parser("kill", parents=[common], help="stop one broker (data kept)")
    kill.add_argument("broker", type=int, metavar="BROKER", help="broker (or controller) id")
    kill.add_argument("--hard", action="store_true", help="SIGKILL instead of a clean shutdown")
    kill.set_defaults(func=_kill)
    restart = verbs.add_parser("restart", parents=[common], help="(re)start one broker")
    restart.add_argument("broker", type=int, metavar="BROKER", help="broker (or controller) id")
    restart.set_defaults(func=_restart)
    down = verbs.add_parser("down", parents=[common], help="stop everything and delete its data")
    down.set_defaults(func=_down)
    for verb, value, text in (
        ("cordon", "*", "cordon every log dir of a broker: it takes no new partitions (Kafka 4.3)"),
        ("uncordon", None, "lift a broker's cordon"),
    ):
        cordon = verbs.add_parser(verb, parents=[common], help=text)
        cordon.add_argument("broker", type=int, metavar="BROKER", help="broker id")
        cordon.set_defaults(func=_cordon, cordoned=value is not None)


def _add_up(verbs: Any, common: argparse.ArgumentParser) -> None:
    up = verbs.add_parser("up", parents=[common], help="start the cluster and wait until ready")
    up.add_argument("--brokers", type=int, default=4, help="number of brokers (default 4)")
    up.add_argument("--racks", type=int, default=2, help="racks, round robin; 0 = none (default 2)")
    up.add_argument("--controllers", type=int, choices=(1, 3), default=1, help="KRaft controllers")
    up.add_argument("--heap-mb", type=int, default=384, help="heap per JVM, MiB (default 384)")
    up.add_argument("--timeout", type=float, default=90.0, help="seconds to wait for readiness")
    up.add_argument(
        "--log-dirs",
        type=int,
        default=1,
        metavar="N",
        help="log dirs per broker (JBOD), DIR/broker-ID/data, data2, ... (default 1)",
    )
    up.add_argument(
        "--tiered",
        action="store_true",
        help="tiered storage (KIP-405) through Kafka's LocalTieredStorage, the remote segments in "
        "DIR/tiered; a topic with remote.storage.enable=true uploads each rolled segment within a "
        "second and keeps local.retention.bytes/ms of it on the brokers",
    )
    up.add_argument(
        "--fetch-last-tiered-offset",
        action="store_true",
        help="with --tiered: follower.fetch.last.tiered.offset.enable (KIP-1023): a new replica "
        "copies only what its leader has not uploaded yet",
    )
    up.add_argument(
        "--sasl",
        action="store_true",
        help="also open a SASL_PLAINTEXT listener on every broker, with ACLs (StandardAuthorizer): "
        "PLAIN user alice / alice-secret (DIR/client-sasl.properties) and SCRAM-SHA-512 users admin "
        "(anything), operator (reassign, but no config changes) and reader (describe only), each "
        "with its --command-config in DIR/client-USER.properties",
    )
    up.add_argument(
        "--ssl",
        action="store_true",
        help="also open an SSL listener on every broker, with a certificate for 127.0.0.1 from a CA "
        "made for the sandbox (openssl), and write its --command-config (PEM trust in DIR/ca.pem) "
        "to DIR/client-ssl.properties",
    )
    up.set_defaults(func=_up)


def _sandbox(args: argparse.Namespace) -> Sandbox:
    return Sandbox(args.dir or default_sandbox_dir())


def _up(args: argparse.Namespace) -> int:
    try:
        spec = ClusterSpec(
            args.brokers,
            args.racks,
            args.controllers,
            args.heap_mb,
            sasl=args.sasl,
            ssl=args.ssl,
            log_dirs=args.log_dirs,
            tiered=args.tiered,
            fetch_last_tiered_offset=args.fetch_last_tiered_offset,
        )
    except ValueError as exc:
        raise UsageError(f"sandbox up: {exc}") from exc
    started = time.monotonic()
    _note("fetching Kafka jars (Maven, cached after the first run)...")
    lib = ensure_jars()
    _note(f"starting {spec.controllers} controller(s) and {spec.brokers} brokers...")
    state = _sandbox(args).up(spec, lib, ready_brokers, timeout_s=args.timeout)
    _note(f"ready in {time.monotonic() - started:.1f} s; stop it with 'ferry sandbox down'")
    if state.sasl_bootstrap is not None:
        sandbox = _sandbox(args)
        _note(f"SASL: --bootstrap-server {state.sasl_bootstrap} --command-config {sandbox.sasl_config_file}")
        for user in SCRAM_USERS:
            _note(f"SCRAM user {user}: --command-config {sandbox.scram_config_file(user)}")
    if state.ssl_bootstrap is not None:
        config = _sandbox(args).ssl_config_file
        _note(f"SSL: --bootstrap-server {state.ssl_bootstrap} --command-config {config}")
    print(state.bootstrap)
    return 0


def _status(args: argparse.Namespace) -> int:
    sandbox = _sandbox(args)
    state = sandbox.state()
    print(f"bootstrap {state.bootstrap}  cluster {state.cluster_id}  kafka {state.kafka_version}")
    if state.sasl_bootstrap is not None:
        print(f"sasl bootstrap {state.sasl_bootstrap}  command config {sandbox.sasl_config_file}")
    for status in sandbox.status():
        node = status.node
        print(
            f"{node.spec.name:<16} port {node.port:<6} rack {node.rack or '-':<4} "
            f"pid {node.pid or '-':<8} {'running' if status.running else 'stopped'}"
        )
    return 0


def _kill(args: argparse.Namespace) -> int:
    node = _sandbox(args).kill(args.broker, hard=args.hard)
    _note(f"stopped {node.spec.name}")
    return 0


def _restart(args: argparse.Namespace) -> int:
    node = _sandbox(args).restart(args.broker, ready_brokers)
    _note(f"{node.spec.name} running (pid {node.pid})")
    return 0


def _down(args: argparse.Namespace) -> int:
    sandbox = _sandbox(args)
    _note("stopped and deleted" if sandbox.down() else f"no sandbox in {sandbox.directory}")
    return 0


def _cordon(args: argparse.Namespace) -> int:
    """Set (or delete) the broker's ``cordoned.log.dirs`` and wait until its log dirs say so."""
    state = _sandbox(args).state()
    key = ConfigKey(ResourceType.BROKER, str(args.broker), CORDONED_DIRS)
    with KafkaPythonAdmin(state.bootstrap, ClientSettings({}), timeout_s=CORDON_WAIT_S) as admin:
        if args.broker not in {b.id for b in admin.describe_brokers()}:
            raise UsageError(f"broker {args.broker} is not a running broker of the sandbox")
        admin.alter_configs({key: "*" if args.cordoned else None})
        deadline = time.monotonic() + CORDON_WAIT_S
        while admin.describe_disks()[args.broker].cordoned != args.cordoned:
            if time.monotonic() > deadline:
                raise KafkaError(f"broker {args.broker}'s log dirs did not change within {CORDON_WAIT_S:g} s")
            time.sleep(0.2)
    _note(f"broker {args.broker} {'cordoned' if args.cordoned else 'uncordoned'}")
    return 0


def _note(message: str) -> None:
    print(f"ferry sandbox: {message}", file=sys.stderr)
