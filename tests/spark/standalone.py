"""A throwaway Spark standalone cluster (a master, one or more workers) on 127.0.0.1, from pyspark's jars.

Started with ``spark-class`` (the launcher the pyspark package ships in ``bin/``) on free ports, with
bounded waits, logs and work files in a temporary folder; :meth:`Standalone.stop` always ends both
processes (SIGTERM, then SIGKILL after a grace period).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).parent
STARTUP_TIMEOUT_S = 120.0
FAST_JVM = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Standalone:
    folder: Path
    master_port: int = field(default_factory=free_port)
    master_ui: int = field(default_factory=free_port)
    workers: int = 1
    worker_cores: int = 2
    worker_memory: str = "2g"
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    def env(self) -> dict[str, str]:
        env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1"}
        # Small, fast-starting JVMs: master and worker only coordinate here.
        env["SPARK_DAEMON_MEMORY"] = "256m"
        env["SPARK_DAEMON_JAVA_OPTS"] = FAST_JVM
        return env

    def _launch(self, name: str, *args: str) -> None:
        log = (self.folder / f"{name}.log").open("wb")
        command = [str(SPARK_HOME / "bin" / "spark-class"), *args]
        # A session of its own, so stop() can signal the JVM and anything it forked as one group.
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=self.env(), start_new_session=True
        )
        log.close()
        self.processes.append(process)

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._launch(
            "master",
            "org.apache.spark.deploy.master.Master",
            *("--host", "127.0.0.1", "--port", str(self.master_port), "--webui-port", str(self.master_ui)),
        )
        for i in range(self.workers):
            self._launch(
                self._worker_name(i),
                "org.apache.spark.deploy.worker.Worker",
                *("--host", "127.0.0.1", "--port", str(free_port()), "--webui-port", str(free_port())),
                *("--cores", str(self.worker_cores), "--memory", self.worker_memory),
                *("--work-dir", str(self.folder / "work")),
                self.url,
            )
        self._wait_for_workers()

    def _worker_name(self, i: int) -> str:
        return "worker" if i == 0 else f"worker-{i}"

    def _wait_for_workers(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            for process in self.processes:
                if process.poll() is not None:
                    raise RuntimeError(f"a Spark process exited early ({process.returncode}); {self.logs()}")
            if self.alive_workers() >= self.workers:
                return
            time.sleep(0.5)
        raise TimeoutError(f"not every worker registered within {STARTUP_TIMEOUT_S:.0f} s; {self.logs()}")

    def alive_workers(self) -> int:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.master_ui}/json/", timeout=2) as reply:
                state = json.load(reply)
        except OSError:
            return 0
        return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")

    def logs(self) -> str:
        tails = []
        for name in ("master", *(self._worker_name(i) for i in range(self.workers))):
            path = self.folder / f"{name}.log"
            text = path.read_text(errors="replace") if path.exists() else ""
            tails.append(f"{name} log tail: {text[-1500:]}")
        return " | ".join(tails)

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


def client_conf_dir(folder: Path) -> Path:
    """A SPARK_CONF_DIR for the job's driver: test-sized executors that start fast."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "spark-defaults.conf").write_text(
        f"spark.executor.memory 1g\nspark.executor.extraJavaOptions {FAST_JVM}\n"
    )
    return folder


@contextmanager
def standalone_cluster(
    folder: Path, *, workers: int = 1, cores: int = 2, memory: str = "2g"
) -> Iterator[Standalone]:
    cluster = Standalone(folder, workers=workers, worker_cores=cores, worker_memory=memory)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
