"""The sandbox state file: which JVMs belong to the cluster, so any process can inspect or stop it.

Written atomically (temp file + ``os.replace``) after every change, so a crash never leaves a
half-written file that would orphan running JVMs.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from ferry.errors import InputError
from ferry.sandbox.layout import NodeSpec, Role

STATE_FILE = "sandbox.json"
_FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class NodeState:
    """A started node: its spec, the pid of its JVM and where its files are."""

    node_id: int
    role: str
    port: int
    rack: str | None
    pid: int | None
    home: str
    sasl_port: int | None = None
    ssl_port: int | None = None

    @classmethod
    def of(cls, node: NodeSpec, pid: int | None, home: Path) -> NodeState:
        return cls(
            node.node_id, node.role.value, node.port, node.rack, pid, str(home), node.sasl_port, node.ssl_port
        )

    @property
    def spec(self) -> NodeSpec:
        return NodeSpec(self.node_id, Role(self.role), self.port, self.rack, self.sasl_port, self.ssl_port)

    @property
    def is_broker(self) -> bool:
        return self.role == Role.BROKER.value

    @property
    def log_file(self) -> Path:
        return Path(self.home) / "server.log"

    @property
    def properties_file(self) -> Path:
        return Path(self.home) / "server.properties"

    def with_pid(self, pid: int | None) -> NodeState:
        return replace(self, pid=pid)


@dataclass(frozen=True, slots=True)
class SandboxState:
    """Everything another process needs to find the cluster: ids, ports, pids, bootstrap."""

    cluster_id: str
    bootstrap: str
    kafka_version: str
    lib: str
    heap_mb: int
    nodes: tuple[NodeState, ...]
    sasl_bootstrap: str | None = None
    """Addresses of the SASL_PLAINTEXT listener, when started with it."""
    ssl_bootstrap: str | None = None
    """Addresses of the SSL listener, when started with it."""

    def node(self, node_id: int) -> NodeState:
        """The node with ``node_id``; KeyError if the sandbox has none."""
        for node in self.nodes:
            if node.node_id == node_id:
                return node
        raise KeyError(node_id)

    def with_node(self, updated: NodeState) -> SandboxState:
        nodes = tuple(updated if n.node_id == updated.node_id else n for n in self.nodes)
        return replace(self, nodes=nodes)

    @property
    def brokers(self) -> tuple[NodeState, ...]:
        return tuple(n for n in self.nodes if n.is_broker)

    def to_json(self) -> dict[str, Any]:
        return {"version": _FORMAT_VERSION, **asdict(self)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SandboxState:
        nodes = tuple(NodeState(**node) for node in data["nodes"])
        fields = {k: v for k, v in data.items() if k not in ("version", "nodes")}
        return cls(nodes=nodes, **fields)


def load_state(directory: Path) -> SandboxState | None:
    """The state saved in ``directory``, or None when no sandbox was started there.

    Raises:
        InputError: the state file exists but cannot be read.
    """
    path = directory / STATE_FILE
    if not path.exists():
        return None
    try:
        return SandboxState.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(
            f"{path}: unreadable sandbox state ({exc})",
            hint="stop the JVMs by hand, then delete it",
        ) from exc


def save_state(directory: Path, state: SandboxState) -> None:
    """Write ``state`` atomically to ``directory/sandbox.json``."""
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".sandbox.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(state.to_json(), out, indent=2)
            out.write("\n")
        os.replace(tmp, directory / STATE_FILE)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
