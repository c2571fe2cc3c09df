"""A class-data archive (AppCDS) for the driver JVM: Spark starts in about half the time.

Spark loads some 10,000 classes from 280 jars before the first query; the JVM can map them from an
archive instead (`benchmarks/spark_startup.py`: process start to the first query's answer 5.7-6.0 s
without, 3.5-3.8 s with).
The archive is specific to the JVM build and the class path, so it is made on this machine: the
first Spark run of a ferry (per pyspark version, Java and JIT flags) asks its JVM to write one when
it exits (``-XX:ArchiveClassesAtExit``), into a name of its own, and renames it into place once the
JVM is gone, so no run ever maps a half-written file. Later runs map it (``-XX:SharedArchiveFile``);
a JVM that finds it unusable starts without it, as it would anyway (``-Xshare:auto``).

Spark's launcher puts more than its jars on that class path: the conf folder (``$SPARK_CONF_DIR``,
else ``$SPARK_HOME/conf``), ``spark.driver.extraClassPath``, ``$HADOOP_CONF_DIR`` and the like
(:func:`class_path_extras`). An archive holds only for the class path it was made with, so those
entries are part of its name. The JVM cannot make an archive while a folder on the class path holds
files (it says "Cannot have non-empty directory in paths" as it exits, and every run would try again,
slower), so then there is no archive at all.

``$FERRY_SPARK_ARCHIVE_DIR`` picks the folder (default ``~/.cache/kafka-ferry/spark-cds``); an
empty value turns archives off.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ENV_DIR = "FERRY_SPARK_ARCHIVE_DIR"
ABANDONED_AFTER_S = 3600.0
"""A half-written archive this old belongs to no running JVM (writing one takes seconds)."""
_QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
"""The JVM reports on archives at warning level (e.g. classes it cannot archive): not the user's business."""


@dataclass(frozen=True, slots=True)
class ClassArchive:
    """Where this run's archive is (``path``) and, on the run that makes it, where the JVM writes it."""

    path: Path
    writing: Path | None = None

    def java_options(self) -> tuple[str, ...]:
        if self.writing is not None:
            return (f"-XX:ArchiveClassesAtExit={self.writing}", *_QUIET)
        return (f"-XX:SharedArchiveFile={self.path}", "-Xshare:auto", *_QUIET)

    def publish(self) -> None:
        """After the JVM exited: move the archive it wrote into place (a no-op when it wrote none)."""
        if self.writing is None:
            return
        try:
            if self.writing.stat().st_size > 0:
                os.replace(self.writing, self.path)
            else:
                self.writing.unlink()
        except OSError:
            pass  # no archive, or no room for it: the next run tries again


def choose(
    env: Mapping[str, str],
    fast_start: bool,
    spark_home: Path,
    spark_version: str,
    extra_class_path: str = "",
) -> ClassArchive | None:
    """The archive of this JVM, Spark and class path (``spark_home``: the pyspark folder, whose jars
    are most of it): use it if it exists, else have this run write it; ``None`` when archives are
    off, no folder can hold them, or a folder on the class path holds files."""
    folder = _folder(env)
    java = launcher_java(env)
    extras = class_path_extras(env, spark_home, extra_class_path)
    if folder is None or java is None or any(_holds_files(entry) for entry in extras):
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    _drop_abandoned(folder)
    path = folder / f"spark-{spark_version}-{_fingerprint(java, spark_home, fast_start, extras)}.jsa"
    if path.is_file():
        return ClassArchive(path)
    return ClassArchive(path, path.with_name(f"{path.stem}.{os.getpid()}.writing"))


def class_path_extras(env: Mapping[str, str], spark_home: Path, extra_class_path: str = "") -> list[str]:
    """The driver's class path entries besides Spark's jars, in the order Spark's launcher adds them
    (``extra_class_path``: the ``spark.driver.extraClassPath`` setting)."""
    conf = env.get("SPARK_CONF_DIR") or str(Path(env.get("SPARK_HOME") or spark_home) / "conf")
    return [
        *_entries(env.get("SPARK_CLASSPATH", "")),
        *_entries(extra_class_path),
        conf,
        *_entries(env.get("HADOOP_CONF_DIR", "")),
        *_entries(env.get("YARN_CONF_DIR", "")),
        *_entries(env.get("SPARK_DIST_CLASSPATH", "")),
    ]


def _entries(class_path: str) -> list[str]:
    return [entry for entry in class_path.split(os.pathsep) if entry]


def _holds_files(entry: str) -> bool:
    folder = Path(entry)
    try:
        return folder.is_dir() and any(folder.iterdir())
    except OSError:
        return False


def _drop_abandoned(folder: Path) -> None:
    """Delete archives a JVM began long ago and nobody published (killed mid-write): 150 MB each."""
    cutoff = time.time() - ABANDONED_AFTER_S
    for stale in folder.glob("*.writing"):
        with contextlib.suppress(OSError):
            if stale.stat().st_mtime < cutoff:
                stale.unlink()


def _folder(env: Mapping[str, str]) -> Path | None:
    if ENV_DIR in env:
        return Path(env[ENV_DIR]).expanduser() if env[ENV_DIR] else None
    return Path.home() / ".cache" / "kafka-ferry" / "spark-cds"


def launcher_java(env: Mapping[str, str]) -> Path | None:
    """The java Spark's launcher runs: ``$JAVA_HOME/bin/java``, else the one on PATH."""
    home = env.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java", path=env.get("PATH"))
    return Path(found).resolve() if found and Path(found).is_file() else None


def _fingerprint(java: Path, spark_home: Path, fast_start: bool, extras: list[str]) -> str:
    """Names the JVM build (its binary's path, size and time), the class path and the JIT flags."""
    info = java.stat()
    jit = "c1" if fast_start else "c2"
    key = f"{java}|{info.st_size}|{info.st_mtime_ns}|{spark_home}|{jit}|{os.pathsep.join(extras)}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]
