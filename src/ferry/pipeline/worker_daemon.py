"""PySpark's worker daemon, run with PySpark imported from its installed package, not from its zips.

Spark starts its Python workers' daemon with ``$SPARK_HOME/python/lib/pyspark.zip`` and Py4J's zip
first on the path. Python caches no bytecode for what it imports from a zip, so the daemon compiled
PySpark's sources on every start, and each worker re-read the zips' directories at every task
(``importlib.invalidate_caches``): about a CPU second per placing pass on two workers, while the
driver still works out the balance. With a ``pip install pyspark`` the same sources are installed
beside those zips, compiled once; this module (``spark.python.daemon.module``) drops the zips
from the path where they belong to that installation, then runs PySpark's own daemon. Anywhere
else (a Spark distribution's own ``SPARK_HOME``) the path stays as Spark set it.
"""

from __future__ import annotations

import importlib.machinery
import sys
from importlib import metadata
from pathlib import Path

MODULE = "ferry.pipeline.worker_daemon"
"""This module's name, for ``spark.python.daemon.module``."""


def installed_zips(path: list[str]) -> list[str]:
    """The entries of ``path`` that are PySpark's and Py4J's zips of the PySpark package installed
    on the rest of ``path`` (none if that package is not there or its zips are elsewhere)."""
    zips = [entry for entry in path if entry.endswith(".zip")]
    rest = [entry for entry in path if entry not in zips]
    spec = importlib.machinery.PathFinder.find_spec("pyspark", rest)
    if spec is None or spec.origin is None:
        return []
    lib = Path(spec.origin).parent / "python" / "lib"
    own = lib / "pyspark.zip"
    if str(own) not in zips:
        return []
    chosen = [str(own)]
    if importlib.machinery.PathFinder.find_spec("py4j", rest) is None:
        return chosen
    try:
        py4j = str(lib / f"py4j-{metadata.version('py4j')}-src.zip")
    except metadata.PackageNotFoundError:
        return chosen
    return [*chosen, py4j] if py4j in zips else chosen


def drop_installed_zips() -> None:
    """Take :func:`installed_zips` off this process's path."""
    for entry in installed_zips(sys.path):
        sys.path.remove(entry)
        # Its importer too, made as this module was found: every task's cache reset re-reads the zips
        # of the importers cached.
        sys.path_importer_cache.pop(entry, None)


def main() -> None:
    drop_installed_zips()
    from pyspark import daemon

    daemon.manager()


if __name__ == "__main__":
    main()
