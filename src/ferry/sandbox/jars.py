"""Fetch the Apache Kafka jars from Maven Central into a local cache, once.

``kafka/pom.xml`` in the repository pins the Kafka release; Maven's ``copy-dependencies`` copies the
broker jar and its runtime dependencies into ``<home>/lib``. A marker file written after a
successful copy makes later runs skip Maven entirely, and the copy goes to a scratch folder first so
an interrupted download never looks complete.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from ferry.errors import PreconditionError
from ferry.sandbox import process

KAFKA_VERSION = "4.3.1"
"""The pinned Kafka release; must match ``kafka.version`` in ``kafka/pom.xml``."""

_MARKER = ".ferry-complete"
_CONTENTS = f"{KAFKA_VERSION} with-local-tiered-storage"
"""What the marker says of a finished copy: the version, and the jar set (a pom that gains a
jar changes it, so an older cache is fetched again)."""
_POM = Path(__file__).resolve().parents[3] / "kafka" / "pom.xml"


def kafka_home(env: Mapping[str, str] | None = None) -> Path:
    """The jar cache folder: ``$FERRY_KAFKA_HOME`` or ``~/.cache/kafka-ferry/kafka-<version>``."""
    env = os.environ if env is None else env
    override = env.get("FERRY_KAFKA_HOME")
    if override:
        return Path(override).expanduser()
    return Path.home() / ".cache" / "kafka-ferry" / f"kafka-{KAFKA_VERSION}"


def is_complete(lib: Path) -> bool:
    """True when ``lib`` holds a finished copy of this Kafka version's jars."""
    marker = lib / _MARKER
    return marker.is_file() and marker.read_text(encoding="utf-8").strip() == _CONTENTS


def ensure_jars(
    home: Path | None = None, *, pom: Path = _POM, mvn: str = "mvn", timeout_s: float = 900.0
) -> Path:
    """Return ``<home>/lib`` with the Kafka jars, running Maven only when the cache is incomplete.

    Raises:
        PreconditionError: Maven or the pom is missing, or Maven failed or timed out.
    """
    lib = (home or kafka_home()) / "lib"
    if is_complete(lib):
        return lib
    if not pom.is_file():
        raise PreconditionError(f"Kafka pom not found at {pom}", hint="run from a kafka-ferry checkout")
    mvn_path = shutil.which(mvn)
    if mvn_path is None:
        raise PreconditionError(f"'{mvn}' not found on PATH", hint="install Maven 3.8+ and Java 17+")
    scratch = lib.with_name("lib.partial")
    shutil.rmtree(scratch, ignore_errors=True)
    _run_maven(mvn_path, pom, scratch, timeout_s)
    (scratch / _MARKER).write_text(_CONTENTS + "\n", encoding="utf-8")
    shutil.rmtree(lib, ignore_errors=True)
    os.replace(scratch, lib)
    return lib


def _run_maven(mvn: str, pom: Path, out: Path, timeout_s: float) -> None:
    command = [
        mvn,
        "-q",
        "-B",
        "-f",
        str(pom),
        "dependency:copy-dependencies",
        "-DincludeScope=runtime",
        f"-DoutputDirectory={out}",
    ]
    process.run_tool(
        command,
        timeout_s,
        "Maven fetching the Kafka jars",
        hint=f"run '{' '.join(command[:-1])}' by hand to see the full output",
    )
