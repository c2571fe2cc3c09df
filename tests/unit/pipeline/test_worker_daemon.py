"""Which zips the workers' daemon drops from its path (:mod:`ferry.pipeline.worker_daemon`)."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pyspark

from ferry.pipeline.worker_daemon import installed_zips

LIB = Path(pyspark.__file__).parent / "python" / "lib"
PYSPARK_ZIP = str(LIB / "pyspark.zip")
PY4J_ZIP = str(LIB / f"py4j-{metadata.version('py4j')}-src.zip")


def test_the_installed_packages_zips_are_dropped() -> None:
    path = [PYSPARK_ZIP, PY4J_ZIP, *sys.path]
    assert installed_zips(path) == [PYSPARK_ZIP, PY4J_ZIP]


def test_zips_of_another_spark_home_stay(tmp_path: Path) -> None:
    other = tmp_path / "spark" / "python" / "lib"
    path = [str(other / "pyspark.zip"), str(other / "py4j-0.10.9.9-src.zip"), *sys.path]
    assert installed_zips(path) == []


def test_without_an_installed_pyspark_nothing_is_dropped() -> None:
    assert installed_zips([PYSPARK_ZIP, PY4J_ZIP]) == []


def test_a_py4j_zip_of_another_version_stays() -> None:
    other = str(LIB / "py4j-0.0.1-src.zip")
    assert installed_zips([PYSPARK_ZIP, other, *sys.path]) == [PYSPARK_ZIP]


def test_pyspark_comes_from_the_package_once_the_zips_are_dropped() -> None:
    # The zips first on PYTHONPATH, as Spark starts its daemon.
    probe = (
        "import sys; from ferry.pipeline import worker_daemon as w; w.drop_installed_zips(); "
        "assert not any(e.endswith('.zip') for e in sys.path_importer_cache if 'pyspark' in e); "
        "import pyspark; print(pyspark.__file__)"
    )
    env = {"PYTHONPATH": f"{PYSPARK_ZIP}:{PY4J_ZIP}", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True, timeout=60
    )
    assert ".zip" not in out.stdout
    assert Path(out.stdout.strip()).parent == Path(pyspark.__file__).parent
