"""Bring a sandbox cluster up, inspect it, kill and restart brokers, and tear it down.

Every operation reads the state file first and writes it after each change, so ``status``, ``kill``,
``restart`` and ``down`` work from any process, not only the one that ran ``up``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from ferry.errors import KafkaError, PreconditionError, UsageError
from ferry.sandbox import layout, node_logs, process, security
from ferry.sandbox.jars import KAFKA_VERSION
from ferry.sandbox.layout import ClusterSpec, NodeSpec, Role
from ferry.sandbox.state import STATE_FILE, NodeState, SandboxState, load_state, save_state

Probe = Callable[[str], frozenset[int]]
"""Given a bootstrap address, the ids of the brokers that are registered and unfenced.

It should return an empty set (not raise) while the cluster is still starting."""

SASL_CONFIG_FILE = "client-sasl.properties"
_TIERED_DIR = "tiered"  # the remote storage of --tiered, shared by every broker
_ACL_LOG4J, _ACL_LOG = "acl-log4j2.xml", "acl.log"
"""The logging config and log of Kafka's AclCommand runs (``--sasl``)."""
_FORMAT_TIMEOUT_S = 60.0
_STOP_GRACE_S = 15.0


def default_sandbox_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$FERRY_SANDBOX_DIR`` or ``~/.cache/kafka-ferry/sandbox``."""
    env = os.environ if env is None else env
    override = env.get("FERRY_SANDBOX_DIR")
    return Path(override).expanduser() if override else Path.home() / ".cache/kafka-ferry/sandbox"


@dataclass(frozen=True, slots=True)
class NodeStatus:
    """A node of the sandbox and whether its JVM is running now."""

    node: NodeState
    running: bool


class Sandbox:
    """The local cluster whose state lives in ``directory``."""

    def __init__(self, directory: Path, *, java: str | None = None, poll_s: float = 0.5) -> None:
        self.directory = directory
        self._java = java
        self._poll_s = poll_s

    @property
    def sasl_config_file(self) -> Path:
        """The ``--command-config`` for the SASL listener, written by ``up`` with ``sasl``."""
        return self.directory / SASL_CONFIG_FILE

    # -- queries ---------------------------------------------------------------------------------

    def state(self) -> SandboxState:
        """The saved state; PreconditionError when no sandbox was started in the directory."""
        state = load_state(self.directory)
        if state is None:
            raise PreconditionError(
                f"no sandbox in {self.directory}", hint="start one with 'ferry sandbox up'"
            )
        return state

    def status(self) -> tuple[NodeStatus, ...]:
        """Every node with its running flag."""
        return tuple(NodeStatus(n, _running(n)) for n in self.state().nodes)

    # -- lifecycle -------------------------------------------------------------------------------

    def up(self, spec: ClusterSpec, lib: Path, probe: Probe, *, timeout_s: float = 90.0) -> SandboxState:
        """Format storage, start every JVM and return once all brokers are ready.

        Raises:
            PreconditionError: a sandbox is already running here, or formatting failed.
            KafkaError: a JVM died or the brokers were not ready within ``timeout_s``.
        """
        self._clear_stale()
        nodes = layout.plan_nodes(spec, process.free_ports(spec.port_count))
        cluster_id = layout.new_cluster_id(os.urandom(16))
        while cluster_id.startswith("-"):
            # kafka-storage would read "-..." as an option (Kafka's Uuid.randomUuid rerolls too).
            cluster_id = layout.new_cluster_id(os.urandom(16))
        keystore = self._make_certificates() if spec.ssl else None
        tiered = (
            layout.Tiered(self.directory / _TIERED_DIR, spec.fetch_last_tiered_offset)
            if spec.tiered
            else None
        )
        if tiered is not None:
            tiered.storage_dir.mkdir(parents=True, exist_ok=True)
        for node in nodes:
            dirs = spec.log_dirs if node.role is Role.BROKER else 1
            self._write_node_files(node, nodes, keystore, dirs, tiered)
        self._format_all(nodes, lib, cluster_id)
        sasl = layout.bootstrap_servers(nodes, sasl=True) if spec.sasl else None
        if sasl is not None:
            self.sasl_config_file.write_text(security.sasl_client_properties(sasl), encoding="utf-8")
        ssl = layout.bootstrap_servers(nodes, ssl=True) if spec.ssl else None
        if ssl is not None:
            text = security.ssl_client_properties(ssl, self.directory / security.SSL_CA)
            self.ssl_config_file.write_text(text, encoding="utf-8")
        bootstrap = layout.bootstrap_servers(nodes)
        state = SandboxState(cluster_id, bootstrap, KAFKA_VERSION, str(lib), spec.heap_mb, (), sasl, ssl)
        state = self._launch_all(state, nodes)
        try:
            self._wait_ready(state, frozenset(n.node_id for n in state.brokers), probe, timeout_s)
            if sasl is not None:
                self._grant(state, lib, sasl)
        except BaseException:
            # Keep the folder (its logs explain the failure) but never leave JVMs behind.
            self._stop_nodes(state, state.nodes, hard=True)
            raise
        return state

    def kill(self, node_id: int, *, hard: bool = False) -> NodeState:
        """Stop one node (SIGTERM, or SIGKILL with ``hard``), keeping its data for a restart."""
        state = self.state()
        node = self._node(state, node_id)
        process.stop(node.pid, _marker(node), grace_s=_STOP_GRACE_S, hard=hard)
        stopped = node.with_pid(None)
        save_state(self.directory, state.with_node(stopped))
        return stopped

    def restart(self, node_id: int, probe: Probe, *, timeout_s: float = 60.0) -> NodeState:
        """(Re)start one node on its old port and data; wait until a restarted broker is ready."""
        state = self.state()
        node = self._node(state, node_id)
        process.stop(node.pid, _marker(node), grace_s=_STOP_GRACE_S)
        ports = [p for p in (node.port, node.sasl_port, node.ssl_port) if p is not None]
        busy = process.wait_released(
            ports, Path(node.home) / layout.DATA_DIR / ".lock", timeout_s=_STOP_GRACE_S
        )
        if busy is not None:
            raise KafkaError(
                f"cannot restart {node.spec.name}: {busy} still held by another process",
                hint="find it with 'ss -ltnp' or 'fuser', stop it, and restart again",
            )
        node_logs.set_logs_aside(node)
        started = node.with_pid(self._launch(state, node.spec))
        state = state.with_node(started)
        save_state(self.directory, state)
        if started.is_broker:
            self._wait_ready(state, frozenset({node_id}), probe, timeout_s)
        return started

    def down(self) -> bool:
        """Stop every node and delete the sandbox's files; False when there was nothing to stop."""
        state = load_state(self.directory)
        if state is None:
            return False
        self._stop_nodes(state, state.nodes, hard=False)
        self._wipe(state)
        return True

    # -- helpers ---------------------------------------------------------------------------------

    def _clear_stale(self) -> None:
        state = load_state(self.directory)
        if state is None:
            return
        if any(_running(n) for n in state.nodes):
            raise PreconditionError(
                f"a sandbox is already running in {self.directory} ({state.bootstrap})",
                hint="run 'ferry sandbox down' first, or pass another --dir",
            )
        self._wipe(state)

    def _node(self, state: SandboxState, node_id: int) -> NodeState:
        try:
            return state.node(node_id)
        except KeyError:
            known = ", ".join(str(n.node_id) for n in state.nodes)
            raise UsageError(f"the sandbox has no node {node_id} (nodes: {known})") from None

    def _home(self, node: NodeSpec) -> Path:
        return self.directory / node.name

    @property
    def ssl_config_file(self) -> Path:
        """The ``--command-config`` for the SSL listener, written by ``up`` with ``ssl``."""
        return self.directory / "client-ssl.properties"

    def _make_certificates(self) -> Path:
        """A CA and the brokers' certificate for 127.0.0.1 (openssl); returns the PEM keystore."""
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / security.SAN_FILE).write_text(security.SAN_EXTENSION, encoding="utf-8")
        for argv in security.openssl_commands(self.directory):
            process.run_tool(
                argv, _FORMAT_TIMEOUT_S, "making the sandbox's TLS certificates", hint="needs openssl"
            )
        keystore = self.directory / security.SSL_KEYSTORE
        parts = (self.directory / name for name in security.KEYSTORE_PARTS)
        keystore.write_text("".join(part.read_text() for part in parts), encoding="utf-8")
        return keystore

    def _write_node_files(
        self,
        node: NodeSpec,
        nodes: tuple[NodeSpec, ...],
        keystore: Path | None,
        log_dirs: int,
        tiered: layout.Tiered | None,
    ) -> None:
        home = self._home(node)
        dirs = layout.data_dirs(home, log_dirs)
        for d in dirs:
            d.mkdir(parents=True, exist_ok=True)
        props = layout.server_properties(node, nodes, dirs, keystore, tiered)
        (home / "server.properties").write_text(layout.render_properties(props), encoding="utf-8")
        log4j = layout.log4j2_config(home / "server.log")
        (home / "log4j2.xml").write_text(log4j, encoding="utf-8")

    def scram_config_file(self, user: str) -> Path:
        """The ``--command-config`` of SCRAM user ``user`` (:data:`layout.SCRAM_USERS`), with ``sasl``."""
        return self.directory / f"client-{user}.properties"

    def _grant(self, state: SandboxState, lib: Path, sasl: str) -> None:
        """The SCRAM users' ACLs (Kafka's own AclCommand, over the PLAINTEXT listener) and their
        client configs."""
        log4j = self.directory / _ACL_LOG4J
        log4j.write_text(layout.log4j2_config(self.directory / _ACL_LOG), encoding="utf-8")
        options = layout.jvm_options(128, log4j)
        for args in security.acl_args(state.bootstrap):
            argv = layout.java_command(self.java, lib, "org.apache.kafka.tools.AclCommand", args, options)
            process.run_tool(argv, _FORMAT_TIMEOUT_S, "granting the sandbox users their ACLs")
        for user in layout.SCRAM_USERS:
            text = security.scram_client_properties(sasl, user)
            self.scram_config_file(user).write_text(text, encoding="utf-8")

    def _format_all(self, nodes: tuple[NodeSpec, ...], lib: Path, cluster_id: str) -> None:
        def format_one(node: NodeSpec) -> None:
            home = self._home(node)
            options = layout.jvm_options(128, home / "log4j2.xml")
            scram = any(n.sasl_port is not None for n in nodes)
            args = layout.format_args(cluster_id, home / "server.properties", scram=scram)
            argv = layout.java_command(self.java, lib, "kafka.tools.StorageTool", args, options)
            process.run_tool(argv, _FORMAT_TIMEOUT_S, f"formatting storage of {node.name}")

        # One short JVM per node; running them side by side halves the wall time on 2 cores.
        with ThreadPoolExecutor(max_workers=len(nodes)) as pool:
            list(pool.map(format_one, nodes))

    def _launch_all(self, state: SandboxState, nodes: tuple[NodeSpec, ...]) -> SandboxState:
        started: list[NodeState] = []
        for node in nodes:
            started.append(NodeState.of(node, self._launch(state, node), self._home(node)))
            # Saved after each start so 'down' finds every JVM even if this loop fails midway.
            state = replace(state, nodes=tuple(started))
            save_state(self.directory, state)
        return state

    def _launch(self, state: SandboxState, node: NodeSpec) -> int:
        home = self._home(node)
        options = layout.jvm_options(state.heap_mb, home / "log4j2.xml")
        argv = layout.java_command(
            self.java, Path(state.lib), "kafka.Kafka", [str(home / "server.properties")], options
        )
        return process.launch(argv, node_logs.console_log_of(home))

    def _wait_ready(
        self, state: SandboxState, wanted: frozenset[int], probe: Probe, timeout_s: float
    ) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            self._check_alive(state)
            # Its own port too: a broker killed a moment ago is still registered and unfenced (until
            # its session times out), so the cluster's word alone would call its restart ready early.
            missing = wanted - probe(state.bootstrap)
            missing |= {
                n.node_id for n in state.brokers if n.node_id in wanted and not process.listening(n.port)
            }
            if not missing:
                return
            if time.monotonic() >= deadline:
                raise KafkaError(
                    f"brokers {sorted(missing)} not ready within {timeout_s:.0f} s",
                    hint=f"see the server.log files under {self.directory}",
                )
            time.sleep(self._poll_s)

    def _check_alive(self, state: SandboxState) -> None:
        for node in state.nodes:
            if node.pid is not None and not _running(node):
                raise KafkaError(
                    f"{node.spec.name} exited during startup{node_logs.exit_reason(node)}",
                    hint=f"see {node.log_file} and {node_logs.console_log(node)}",
                )

    def _stop_nodes(self, state: SandboxState, nodes: tuple[NodeState, ...], *, hard: bool) -> None:
        # Brokers first: a broker's controlled shutdown needs a live controller.
        brokers = tuple(n for n in nodes if n.is_broker)
        controllers = tuple(n for n in nodes if not n.is_broker)
        for group in (brokers, controllers):
            _stop_group(group, hard=hard)
        for node in nodes:
            state = state.with_node(node.with_pid(None))
        save_state(self.directory, state)

    def _wipe(self, state: SandboxState) -> None:
        # Delete only what the sandbox created: --dir may point at a folder holding other files.
        for node in state.nodes:
            shutil.rmtree(node.home, ignore_errors=True)
        shutil.rmtree(self.directory / _TIERED_DIR, ignore_errors=True)
        (self.directory / STATE_FILE).unlink(missing_ok=True)
        self.sasl_config_file.unlink(missing_ok=True)
        for user in layout.SCRAM_USERS:
            self.scram_config_file(user).unlink(missing_ok=True)
        self.ssl_config_file.unlink(missing_ok=True)
        for name in (*security.CERTIFICATE_FILES, _ACL_LOG4J, _ACL_LOG):
            (self.directory / name).unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.directory.rmdir()

    @property
    def java(self) -> str:
        """The java executable: the constructor's, else ``$JAVA_HOME/bin/java``, else PATH."""
        if self._java:
            return self._java
        java_home = os.environ.get("JAVA_HOME")
        found = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
        if not found:
            raise PreconditionError("java not found", hint="install Java 17+ or set JAVA_HOME")
        self._java = found
        return found


def _marker(node: NodeState) -> str:
    return str(node.properties_file)


def _running(node: NodeState) -> bool:
    return process.is_running(node.pid, _marker(node))


def _stop_group(nodes: tuple[NodeState, ...], *, hard: bool) -> None:
    live = [n for n in nodes if _running(n)]
    pids = [n.pid for n in live if n.pid is not None]
    markers = {n.pid: _marker(n) for n in live if n.pid is not None}
    process.signal_all(pids, signal.SIGKILL if hard else signal.SIGTERM)
    if not process.wait_exit(pids, marker_of=markers, timeout_s=_STOP_GRACE_S):
        process.signal_all(pids, signal.SIGKILL)
        process.wait_exit(pids, marker_of=markers, timeout_s=10.0)
