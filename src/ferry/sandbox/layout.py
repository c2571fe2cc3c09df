"""Pure description of a sandbox cluster: node ids, racks, ports, properties and JVM command lines.

Nothing here touches the disk, the clock or the network, so every generated setting is unit-tested.
Controllers get node ids from 1000 up and brokers from 1 up, so the id in ``ferry sandbox kill 2``
reads like the broker ids in snapshots and plans.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

CONTROLLER_ID_BASE = 1000
_HOST = "127.0.0.1"

SASL_USER = "alice"
SASL_PASSWORD = "alice-secret"
"""The one user the SASL_PLAINTEXT listener knows (``--sasl``); a local test credential, not a secret."""
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
SCRAM = "SCRAM-SHA-512"
SCRAM_USERS = {
    "admin": "admin-secret",
    "operator": "operator-secret",
    "reader": "reader-secret",
    "viewer": "viewer-secret",
}
"""With ``--sasl``, the SCRAM users (local test credentials, not secrets) and what ACLs let them do:
``admin`` everything (a super user, as ``alice`` and the PLAINTEXT listener's ANONYMOUS are);
``operator`` reassign (ALTER on the cluster), describe the cluster, topics and their configs and
use the freeze topic, but not change configs, so no throttle; ``reader`` describe the cluster,
topics and their configs; ``viewer`` describe the cluster and topics but not their configs."""
_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
_SUPER_USERS = f"User:ANONYMOUS;User:{SASL_USER};User:admin"
MAX_LOG_DIRS = 8
DATA_DIR = "data"
"""The (first) log dir of a node, in its folder; Kafka keeps its lock file in it."""


def data_dirs(home: Path, count: int) -> tuple[Path, ...]:
    """The log dirs of a node living in ``home``: ``data``, then ``data2``, ``data3``..."""
    return (home / DATA_DIR, *(home / f"{DATA_DIR}{i}" for i in range(2, count + 1)))


class Role(StrEnum):
    """The KRaft ``process.roles`` of a node; the sandbox never combines the two."""

    CONTROLLER = "controller"
    BROKER = "broker"


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """What to start: ``brokers`` brokers spread over ``racks`` racks, and 1 or 3 controllers.

    With ``sasl`` every broker also listens on a SASL_PLAINTEXT port (mechanism PLAIN, one static
    user), so authentication can be tried and tested against real brokers; the PLAINTEXT listener
    stays, for inter-broker traffic and for clients without credentials.
    """

    brokers: int = 4
    racks: int = 2
    controllers: int = 1
    heap_mb: int = 384
    sasl: bool = False
    ssl: bool = False
    """Every broker also listens on an SSL port, with a certificate from a CA made for the sandbox."""
    log_dirs: int = 1
    """Log dirs per broker (JBOD); controllers keep one."""
    tiered: bool = False
    """Remote storage (KIP-405) on a local folder shared by the brokers (:class:`Tiered`)."""
    fetch_last_tiered_offset: bool = False
    """With ``tiered``: new followers start at the leader's earliest offset not yet uploaded
    (``follower.fetch.last.tiered.offset.enable``, KIP-1023) rather than its earliest local one."""

    def __post_init__(self) -> None:
        if self.brokers < 1:
            raise ValueError(f"need at least one broker, got {self.brokers}")
        if self.controllers not in (1, 3):
            raise ValueError(f"controllers must be 1 or 3, got {self.controllers}")
        # More racks than brokers is allowed (the extra racks stay empty) so --brokers 1 just works.
        if self.racks < 0:
            raise ValueError(f"racks must be 0 (no racks) or more, got {self.racks}")
        if not 128 <= self.heap_mb <= 512:
            raise ValueError(f"heap must be between 128 and 512 MiB, got {self.heap_mb}")
        if self.fetch_last_tiered_offset and not self.tiered:
            raise ValueError("fetching from the last tiered offset needs tiered storage")
        if not 1 <= self.log_dirs <= MAX_LOG_DIRS:
            raise ValueError(f"log dirs per broker must be between 1 and {MAX_LOG_DIRS}, got {self.log_dirs}")

    @property
    def node_count(self) -> int:
        return self.brokers + self.controllers

    @property
    def port_count(self) -> int:
        """One port per node, plus one per broker for each of the SASL and SSL listeners."""
        return self.node_count + self.brokers * (int(self.sasl) + int(self.ssl))


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One JVM of the cluster: its id, role, listener port and (brokers only) rack."""

    node_id: int
    role: Role
    port: int
    rack: str | None = None
    sasl_port: int | None = None
    ssl_port: int | None = None

    @property
    def name(self) -> str:
        """Folder name of the node, e.g. ``broker-1`` or ``controller-1000``."""
        return f"{self.role.value}-{self.node_id}"

    @property
    def address(self) -> str:
        return f"{_HOST}:{self.port}"

    @property
    def sasl_address(self) -> str | None:
        return None if self.sasl_port is None else f"{_HOST}:{self.sasl_port}"

    @property
    def ssl_address(self) -> str | None:
        return None if self.ssl_port is None else f"{_HOST}:{self.ssl_port}"


def rack_name(broker_index: int, racks: int) -> str | None:
    """Rack of the ``broker_index``-th broker (0-based): ``r0, r1, ...`` round robin, or None."""
    return None if racks == 0 else f"r{broker_index % racks}"


def plan_nodes(spec: ClusterSpec, ports: Sequence[int]) -> tuple[NodeSpec, ...]:
    """Assign ids, racks and ports to every node of ``spec``: controllers first, then brokers, then
    (with ``sasl``) the brokers' SASL ports, then (with ``ssl``) their SSL ports."""
    if len(ports) != spec.port_count or len(set(ports)) != len(ports):
        raise ValueError(f"need {spec.port_count} distinct ports, got {list(ports)}")
    controllers = [
        NodeSpec(CONTROLLER_ID_BASE + i, Role.CONTROLLER, ports[i]) for i in range(spec.controllers)
    ]
    brokers = [
        NodeSpec(
            i + 1,
            Role.BROKER,
            ports[spec.controllers + i],
            rack_name(i, spec.racks),
            ports[spec.node_count + i] if spec.sasl else None,
            ports[spec.node_count + spec.brokers * int(spec.sasl) + i] if spec.ssl else None,
        )
        for i in range(spec.brokers)
    ]
    return (*controllers, *brokers)


def bootstrap_servers(nodes: Sequence[NodeSpec], *, sasl: bool = False, ssl: bool = False) -> str:
    """Comma-separated broker addresses (of the SASL or SSL listener), for --bootstrap-server."""
    brokers = [n for n in nodes if n.role is Role.BROKER]
    addresses = [n.sasl_address if sasl else n.ssl_address if ssl else n.address for n in brokers]
    return ",".join(a for a in addresses if a is not None)


def new_cluster_id(random16: bytes) -> str:
    """A KRaft cluster id (URL-safe base64 of 16 bytes, unpadded) from the caller's randomness."""
    if len(random16) != 16:
        raise ValueError("a cluster id needs exactly 16 random bytes")
    return base64.urlsafe_b64encode(random16).rstrip(b"=").decode("ascii")


@dataclass(frozen=True, slots=True)
class Tiered:
    """Tiered storage for the brokers: Kafka's own ``LocalTieredStorage`` (from the kafka-storage
    test jar) keeping the remote segments in ``storage_dir``, one folder all brokers share, as an
    object store would be."""

    storage_dir: Path
    fetch_last_tiered_offset: bool = False

    def properties(self, brokers: int) -> dict[str, str]:
        return {
            "remote.log.storage.system.enable": "true",
            "remote.log.storage.manager.class.name": _LOCAL_TIERED_STORAGE,
            "remote.log.storage.manager.impl.prefix": "rsm.config.",
            "rsm.config.dir": str(self.storage_dir),
            "remote.log.metadata.manager.listener.name": "PLAINTEXT",
            "rlmm.config.remote.log.metadata.topic.replication.factor": str(min(3, brokers)),
            "rlmm.config.remote.log.metadata.topic.num.partitions": "5",
            # Upload within a second of a segment rolling, and delete uploaded local segments past
            # local retention as soon: a test sees its topic tiered in seconds.
            "remote.log.manager.task.interval.ms": "1000",
            "log.retention.check.interval.ms": "1000",
            "follower.fetch.last.tiered.offset.enable": str(self.fetch_last_tiered_offset).lower(),
        }


_LOCAL_TIERED_STORAGE = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"


def server_properties(
    node: NodeSpec,
    nodes: Sequence[NodeSpec],
    log_dirs: Sequence[Path],
    keystore: Path | None = None,
    tiered: Tiered | None = None,
) -> dict[str, str]:
    """The ``server.properties`` of ``node`` in a cluster of ``nodes``, keeping its data in
    ``log_dirs``; ``keystore`` is the PEM file of the SSL listener (brokers with an SSL port),
    ``tiered`` the brokers' remote storage."""
    controllers = [n for n in nodes if n.role is Role.CONTROLLER]
    brokers = sum(1 for n in nodes if n.role is Role.BROKER)
    props = {
        "process.roles": node.role.value,
        "node.id": str(node.node_id),
        # A static voter set formats the same way for 1 or 3 controllers (no --standalone needed).
        "controller.quorum.voters": ",".join(f"{c.node_id}@{c.address}" for c in controllers),
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": ",".join(str(d) for d in log_dirs),
        "num.network.threads": "2",
        "num.io.threads": "2",
        "background.threads": "2",
        "num.recovery.threads.per.data.dir": "1",
    }
    if node.role is Role.CONTROLLER:
        props["listeners"] = f"CONTROLLER://{node.address}"
        if tiered is not None:
            # The controller validates topic configs: remote.storage.enable needs the system on.
            props["remote.log.storage.system.enable"] = "true"
    else:
        props.update(_broker_properties(node, brokers, keystore))
        if tiered is not None:
            props.update(tiered.properties(brokers))
    if any(n.sasl_port is not None for n in nodes):
        # Every node authorizes (controllers too: brokers forward requests with the client's
        # principal); the PLAINTEXT and CONTROLLER listeners' ANONYMOUS is a super user.
        props["authorizer.class.name"] = _AUTHORIZER
        props["super.users"] = _SUPER_USERS
    return props


def _broker_properties(node: NodeSpec, brokers: int, keystore: Path | None) -> dict[str, str]:
    internal_rf = str(min(3, brokers))
    props = {
        "listeners": f"PLAINTEXT://{node.address}",
        "advertised.listeners": f"PLAINTEXT://{node.address}",
        "inter.broker.listener.name": "PLAINTEXT",
        # Tests create every topic explicitly; a typo must fail rather than invent a topic.
        "auto.create.topics.enable": "false",
        "offsets.topic.replication.factor": internal_rf,
        "offsets.topic.num.partitions": "6",
        "transaction.state.log.replication.factor": internal_rf,
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "6",
        "share.coordinator.state.topic.replication.factor": internal_rf,
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        # Small segments make a few MB of test data span several files, as real logs do.
        "log.segment.bytes": str(1024 * 1024),
        "num.replica.fetchers": "1",
        "log.cleaner.threads": "1",
        # The 128 MiB default dedupe buffer would take a third of the small heap.
        "log.cleaner.dedupe.buffer.size": str(8 * 1024 * 1024),
    }
    if node.rack is not None:
        props["broker.rack"] = node.rack
    listeners = {"PLAINTEXT": node.address, "SASL_PLAINTEXT": node.sasl_address, "SSL": node.ssl_address}
    opened = {name: address for name, address in listeners.items() if address is not None}
    if len(opened) > 1:
        joined = ",".join(f"{name}://{address}" for name, address in opened.items())
        props["listeners"] = props["advertised.listeners"] = joined
        props["listener.security.protocol.map"] = ",".join(
            ["CONTROLLER:PLAINTEXT", *(f"{name}:{name}" for name in opened)]
        )
    if node.sasl_address is not None:
        props.update(_sasl_properties())
    if node.ssl_address is not None and keystore is not None:
        # One PEM file holding the key (PKCS#8, unencrypted) and the certificate chain.
        props["listener.name.ssl.ssl.keystore.type"] = "PEM"
        props["listener.name.ssl.ssl.keystore.location"] = str(keystore)
    return props


def _sasl_properties() -> dict[str, str]:
    # A static PLAIN user in the listener's JAAS config, and SCRAM users created when storage is
    # formatted (format_args): both authenticate from the first second.
    users = f'{PLAIN_MODULE} required user_{SASL_USER}="{SASL_PASSWORD}";'
    return {
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": f"PLAIN,{SCRAM}",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": users,
        f"listener.name.sasl_plaintext.{SCRAM.lower()}.sasl.jaas.config": f"{SCRAM_MODULE} required;",
    }


def render_properties(props: Mapping[str, str]) -> str:
    """Java properties text; values here never need escaping (paths, ids, addresses)."""
    return "".join(f"{key}={value}\n" for key, value in props.items())


def log4j2_config(log_file: Path) -> str:
    """A log4j2 XML config sending everything at INFO to ``log_file`` (not to the console)."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="warn">
  <Appenders>
    <File name="file" fileName="{log_file}">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
    </File>
  </Appenders>
  <Loggers>
    <Logger name="kafka.request.logger" level="warn"/>
    <Logger name="org.apache.kafka.controller" level="info"/>
    <Root level="info"><AppenderRef ref="file"/></Root>
  </Loggers>
</Configuration>
"""


def jvm_options(heap_mb: int, log4j_file: Path) -> list[str]:
    """JVM flags tuned for many small JVMs on a 2-core machine (fast start over peak speed)."""
    return [
        f"-Xmx{heap_mb}m",
        "-Xms64m",
        "-XX:+UseSerialGC",
        # C1 only: the broker starts in about half the time and is fast enough for tests.
        "-XX:TieredStopAtLevel=1",
        "-Xshare:auto",
        "-Djava.awt.headless=true",
        "-Djava.net.preferIPv4Stack=true",
        f"-Dlog4j2.configurationFile={log4j_file}",
        # A crash report beside the node's logs, not in whatever folder ferry was started from.
        f"-XX:ErrorFile={log4j_file.parent / 'hs_err_pid%p.log'}",
    ]


def java_command(
    java: str, lib: Path, main_class: str, args: Sequence[str], options: Sequence[str]
) -> list[str]:
    """argv for ``java <options> -cp <lib>/* <main_class> <args>`` (the JVM expands the ``*``)."""
    return [java, *options, "-cp", f"{lib}/*", main_class, *args]


def format_args(cluster_id: str, properties_file: Path, *, scram: bool = False) -> list[str]:
    """Arguments of ``kafka.tools.StorageTool`` formatting one node's storage; with ``scram`` the
    SCRAM users' credentials go into the cluster's first metadata."""
    users = [
        arg for u, p in SCRAM_USERS.items() for arg in ("--add-scram", f"{SCRAM}=[name={u},password={p}]")
    ]
    return [
        "format",
        "--ignore-formatted",
        "-t",
        cluster_id,
        "-c",
        str(properties_file),
        *(users if scram else []),
    ]
