"""The SparkSession factory: local mode by default, quiet, or wherever the standard Spark settings point.

Which master: ``--spark-master`` if given, else ``SPARK_MASTER``, else ``spark.master`` from
spark-defaults.conf (``$SPARK_CONF_DIR``, then ``$SPARK_HOME/conf``), else ``local[2]``. The same
order decides the driver memory (``SPARK_DRIVER_MEMORY`` / ``spark.driver.memory``), default 4g: the
1g Spark default runs out of heap on million-row snapshots.

Before a JVM starts, :func:`preflight` turns the usual ways of failing into one-line errors: a master
that is no Spark master URL (:class:`~ferry.errors.UsageError`), no Java, or a standalone master
that accepts no connection (:class:`~ferry.errors.SparkError`). Left to Spark, an unreachable master
printed a hundred lines of Java stack traces for a minute before failing.
"""

from __future__ import annotations

import atexit
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from ferry.errors import SparkError, UsageError
from ferry.pipeline import worker_daemon
from ferry.pipeline.archive import ClassArchive, choose, launcher_java

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[2]"
DEFAULT_DRIVER_MEMORY = "4g"
# C1-only JIT and the serial collector start the JVM about twice as fast on a busy 2-core box and
# cap peak speed; `ferry plan` uses them at every size, where the JVM only moves blobs of topics.
FAST_START_JVM = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
_EXTRA_CLASS_PATH = "spark.driver.extraClassPath"
MASTER_FORMS = "local, local[N], local[*], spark://HOST:PORT[,HOST:PORT...], yarn or k8s://URL"
PROBE_TIMEOUT_S = 5.0
"""How long a standalone master's address may take to accept a connection."""
_HOST_PORT = r"(?:\[[0-9A-Fa-f:.]+\]|[^\s,:/\[\]]+):\d+"
_LOCAL = r"local(?:\[(\d+|\*)(?:,\d+)?\])?"
"""A local master; its group: the threads (none: one)."""
_LOCAL_MASTER = re.compile(_LOCAL)
_PARALLELISM = "spark.default.parallelism"
_MASTER_URL = re.compile(
    rf"{_LOCAL}|local-cluster\[\d+, *\d+, *\d+\]"
    rf"|spark://{_HOST_PORT}(?:,{_HOST_PORT})*|yarn|k8s://\S+"
)


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """How to start Spark. ``None`` means: take it from the environment, then the default."""

    master: str | None = None
    driver_memory: str | None = None
    app_name: str = "ferry"
    fast_start: bool = False
    extra: tuple[tuple[str, str], ...] = ()
    """More Spark settings, applied last."""
    java_options: tuple[str, ...] = ()
    """More options for the driver JVM."""
    class_archive: bool = False
    """Start the driver JVM from a class-data archive (:mod:`ferry.pipeline.archive`), made on the
    first run; only :func:`spark_session` does, as only it knows when the JVM ends."""
    jvm_log: Path | None = None
    """Where the launcher's and the driver JVM's own output goes (its start-up warnings, Spark's
    log lines, the Python workers' stray output), so that ferry's output is ferry's alone;
    ``None``: this process's own stdout and stderr (``--debug``)."""


def spark_defaults(env: Mapping[str, str]) -> dict[str, str]:
    """The settings of the spark-defaults.conf Spark itself would read, or {} if there is none."""
    for folder in (env.get("SPARK_CONF_DIR"), env.get("SPARK_HOME") and f"{env['SPARK_HOME']}/conf"):
        if folder and (Path(folder) / "spark-defaults.conf").is_file():
            return parse_properties((Path(folder) / "spark-defaults.conf").read_text(encoding="utf-8"))
    return {}


def parse_properties(text: str) -> dict[str, str]:
    """``key value`` or ``key=value`` lines, ``#`` comments, as spark-defaults.conf holds them."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, _, value = line.replace("=", " ", 1).partition(" ")
        out[key.strip()] = value.strip()
    return out


def pick_master(
    settings: SessionSettings, env: Mapping[str, str], defaults: Mapping[str, str]
) -> tuple[str, str]:
    """The master URL, and where it was set (for error messages)."""
    if settings.master:
        return settings.master, "--spark-master"
    if env.get("SPARK_MASTER"):
        return env["SPARK_MASTER"], "SPARK_MASTER"
    if defaults.get("spark.master"):
        return defaults["spark.master"], "spark.master of spark-defaults.conf"
    return DEFAULT_MASTER, "the default master"


def expected_slots(
    settings: SessionSettings, env: Mapping[str, str], defaults: Mapping[str, str]
) -> int | None:
    """The task slots (Spark's default parallelism) the session will have, where that is known before it
    starts: ``spark.default.parallelism`` if set, else a local master's threads; ``None`` for a
    cluster, whose executors are counted once they register."""
    given = dict(settings.extra).get(_PARALLELISM) or defaults.get(_PARALLELISM)
    if given and given.strip().isdigit():
        return int(given)
    local = _LOCAL_MASTER.fullmatch(pick_master(settings, env, defaults)[0])
    if local is None:
        return None
    threads = local.group(1)
    if threads == "*":
        # As the JVM counts them (Runtime.availableProcessors): the cores this process may run on.
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return int(threads) if threads else 1


def check_master(url: str, source: str) -> None:
    """Raise :class:`UsageError` unless ``url`` has a form Spark takes as a master."""
    if not _MASTER_URL.fullmatch(url):
        raise UsageError(f"{source}: {url!r} is not a Spark master URL", hint=f"use {MASTER_FORMS}")


def standalone_addresses(url: str) -> list[tuple[str, int]]:
    """The (host, port) of each master of a ``spark://`` URL (several for a standby setup)."""
    if not url.startswith("spark://"):
        return []
    out = []
    for item in url.removeprefix("spark://").split(","):
        host, _, port = item.rpartition(":")
        out.append((host.strip("[]"), int(port)))
    return out


def probe_master(url: str, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Raise :class:`SparkError` when no master of a ``spark://`` URL accepts a connection."""
    failures = []
    for host, port in standalone_addresses(url):
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                return
        except OSError as exc:
            failures.append(f"{host}:{port} {exc.strerror or exc}")
    if failures:
        raise SparkError(
            f"cannot reach the Spark master {url}: {'; '.join(failures)}",
            hint="check the URL and that the master runs (pyspark's sbin/start-master.sh starts one)",
        )


def require_java(env: Mapping[str, str]) -> None:
    """Raise :class:`SparkError` when there is no java for Spark's launcher to run."""
    if launcher_java(env) is not None:
        return
    where = f"JAVA_HOME={env['JAVA_HOME']} has no bin/java" if env.get("JAVA_HOME") else "no java on PATH"
    raise SparkError(f"Spark needs Java and finds none: {where}", hint="install Java 17+ and set JAVA_HOME")


def preflight(settings: SessionSettings, env: Mapping[str, str], defaults: Mapping[str, str]) -> None:
    """What can be checked before a JVM starts: the master URL, Java, a standalone master's address."""
    url, source = pick_master(settings, env, defaults)
    check_master(url, source)
    require_java(env)
    probe_master(url)


def resolve(settings: SessionSettings, env: Mapping[str, str], defaults: Mapping[str, str]) -> dict[str, str]:
    """The Spark settings ferry passes to the session builder (pure, so it is tested without Spark)."""
    master, _ = pick_master(settings, env, defaults)
    memory = (
        settings.driver_memory
        or env.get("SPARK_DRIVER_MEMORY")
        or defaults.get("spark.driver.memory")
        or DEFAULT_DRIVER_MEMORY
    )
    log_config = resources.files("ferry.pipeline") / "log4j2.properties"
    java_options = [f"-Dlog4j2.configurationFile=file:{log_config}"]
    if settings.fast_start:
        java_options.append(FAST_START_JVM)
    java_options.extend(settings.java_options)
    conf = {
        "spark.master": master,
        "spark.app.name": settings.app_name,
        "spark.driver.memory": memory,
        "spark.driver.extraJavaOptions": " ".join(java_options),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.python.daemon.module": worker_daemon.MODULE,
    }
    conf.update(settings.extra)
    return conf


def prepare_environment(env: MutableMapping[str, str]) -> None:
    """Environment the JVM and the Python workers it forks must see (set only where unset)."""
    # Workers must run this interpreter (the virtualenv's), not whatever python3 is on PATH.
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # The host name resolves to loopback here; without this Spark warns and binds another interface.
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def start_session(settings: SessionSettings) -> SparkSession:
    """Start (or join the already running) SparkSession of this process."""
    prepare_environment(os.environ)
    defaults = spark_defaults(os.environ)
    preflight(settings, os.environ, defaults)
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    conf = resolve(settings, os.environ, defaults)
    for key, value in conf.items():
        builder = builder.config(key, value)
    try:
        with jvm_output(settings.jvm_log):
            spark = builder.getOrCreate()
    except (PySparkException, Py4JError) as exc:
        raise SparkError(
            f"Spark did not start (master {conf['spark.master']}): {_first_line(exc)}",
            hint=_why(settings.jvm_log),
        ) from exc
    spark.sparkContext.setLogLevel("ERROR")
    return spark


@contextmanager
def spark_session(settings: SessionSettings) -> Iterator[SparkSession]:
    """A session for one command: started here and stopped at the end, however the block ends.

    If this process already runs a session (a notebook, a test suite), that one is used as it is,
    and left running: it is not ours to stop, and its settings win over ``settings``.
    """
    from pyspark.sql import SparkSession

    running = SparkSession.getActiveSession()
    if running is not None:
        yield running
        return
    archive = _class_archive(settings)
    if archive is not None:
        settings = replace(settings, java_options=(*settings.java_options, *archive.java_options()))
    spark = start_session(settings)
    try:
        yield spark
    finally:
        spark.stop()
        if archive is not None and archive.writing is not None:
            # The JVM writes the archive as it exits, which takes seconds: let that happen once the
            # command has written its files and said its piece, when this process exits anyway.
            atexit.register(_publish_at_exit, archive)


def plan_session(master: str | None, *, debug: bool, fast_start: bool = True) -> SessionSettings:
    """How ``ferry plan`` starts Spark: from a class-data archive, and with the JVM's own output
    (start-up warnings, Spark's log) in a log file unless ``debug``."""
    log = None if debug else default_jvm_log(os.environ)
    return SessionSettings(master=master, fast_start=fast_start, class_archive=True, jvm_log=log)


KEEP_LOGS = 20
"""JVM logs kept in the log folder: enough to look back at the last runs, never a growing pile."""


def default_jvm_log(env: Mapping[str, str]) -> Path:
    """A fresh log file for this process's JVM, in ``$FERRY_LOG_DIR`` (default
    ``~/.cache/kafka-ferry/logs``); the oldest beyond the newest :data:`KEEP_LOGS` are removed."""
    folder = Path(env.get("FERRY_LOG_DIR") or Path.home() / ".cache" / "kafka-ferry" / "logs")
    old = sorted(folder.glob("spark-*.log"))[: -KEEP_LOGS + 1] if folder.is_dir() else []
    for path in old:
        path.unlink(missing_ok=True)
    return folder / f"spark-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"


@contextmanager
def jvm_output(log: Path | None) -> Iterator[None]:
    """Point this process's stdout and stderr at ``log`` while the block starts the JVM.

    The launcher and the JVM it starts inherit those two file descriptors and keep them for their
    lifetime, so everything they print goes to ``log``; this process gets its own back at the end
    of the block. ``None``: nothing changes.
    """
    if log is None:
        yield
        return
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = (os.dup(1), os.dup(2))
    with log.open("ab") as target:
        os.dup2(target.fileno(), 1)
        os.dup2(target.fileno(), 2)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)


def _why(log: Path | None) -> str:
    """Where to read why the JVM did not start: its last line in ``log``, or the output above."""
    if log is None:
        return "Spark's launcher or the JVM said why above; --debug shows the traceback"
    try:
        lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        lines = []
    # The JVM names the cause first ("Invalid maximum heap size: -Xmx4x"), after any warning.
    cause = next((line for line in lines if not line.startswith("WARNING")), None)
    said = f"the JVM said: {cause}; " if cause else ""
    return f"{said}its whole output is in {log} (--debug shows it here)"


def _first_line(exc: Exception) -> str:
    """The gist of a py4j or PySpark error: the Java exception's own line, not its stack."""
    java = getattr(exc, "java_exception", None)
    text = str(java) if java is not None else str(exc)
    return next((line.strip() for line in text.splitlines() if line.strip()), type(exc).__name__)


def _publish_at_exit(archive: ClassArchive) -> None:
    if _end_jvm():
        archive.publish()


def _class_archive(settings: SessionSettings) -> ClassArchive | None:
    if not settings.class_archive:
        return None
    import pyspark

    defaults = spark_defaults(os.environ)
    extra = dict(settings.extra).get(_EXTRA_CLASS_PATH) or defaults.get(_EXTRA_CLASS_PATH, "")
    home = Path(pyspark.__file__).parent
    return choose(os.environ, settings.fast_start, home, pyspark.__version__, extra)


def _end_jvm(timeout_s: float = 120.0) -> bool:
    """Let the driver JVM exit (it writes its class archive then) and wait for it; True if it did.

    The JVM lives until its stdin closes, which is normally when this process exits; closing it
    here is the only way to know when the archive is complete. A later session starts a new JVM.
    """
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if gateway is None or proc is None or proc.stdin is None:
        return False
    gateway.shutdown()
    proc.stdin.close()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return False
    finally:
        SparkContext._gateway = None
        SparkContext._jvm = None
    return bool(proc.returncode == 0)
