"""Choosing and publishing the driver JVM's class-data archive (no JVM needed)."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from ferry.pipeline.archive import ABANDONED_AFTER_S, ENV_DIR, choose


@pytest.fixture
def java(tmp_path: Path) -> dict[str, str]:
    """An environment whose JAVA_HOME holds a (fake) java binary."""
    binary = tmp_path / "jdk" / "bin" / "java"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    return {"JAVA_HOME": str(tmp_path / "jdk"), ENV_DIR: str(tmp_path / "cds")}


def test_the_first_run_writes_under_its_own_name_and_publishes_after_the_jvm(
    java: dict[str, str], tmp_path: Path
) -> None:
    first = choose(java, False, tmp_path / "pyspark", "4.3.0")
    assert first is not None and first.writing is not None
    assert first.writing != first.path and str(os.getpid()) in first.writing.name
    assert f"-XX:ArchiveClassesAtExit={first.writing}" in first.java_options()
    first.writing.write_bytes(b"archive")  # what the JVM leaves at exit
    first.publish()
    assert first.path.read_bytes() == b"archive" and not first.writing.exists()
    later = choose(java, False, tmp_path / "pyspark", "4.3.0")
    assert later is not None and later.writing is None and later.path == first.path
    assert f"-XX:SharedArchiveFile={first.path}" in later.java_options()
    assert "-Xshare:auto" in later.java_options()


def test_an_empty_or_missing_archive_is_never_published(java: dict[str, str], tmp_path: Path) -> None:
    run = choose(java, False, tmp_path / "pyspark", "4.3.0")
    assert run is not None and run.writing is not None
    run.publish()  # the JVM wrote nothing (killed, or no room)
    assert not run.path.exists()
    run.writing.write_bytes(b"")
    run.publish()
    assert not run.path.exists() and not run.writing.exists()


def test_each_jit_setting_spark_and_java_has_its_own_archive(java: dict[str, str], tmp_path: Path) -> None:
    names = set()
    for fast, home, version in [
        (False, "a", "4.3.0"),
        (True, "a", "4.3.0"),
        (False, "b", "4.3.0"),
        (False, "a", "4.4.0"),
    ]:
        archive = choose(java, fast, tmp_path / home, version)
        assert archive is not None
        names.add(archive.path.name)
    assert len(names) == 4


def test_archives_are_off_with_an_empty_folder_setting_or_without_java(tmp_path: Path) -> None:
    assert choose({ENV_DIR: "", "JAVA_HOME": str(tmp_path)}, False, tmp_path, "4.3.0") is None
    no_java = {ENV_DIR: str(tmp_path / "cds"), "JAVA_HOME": str(tmp_path / "nowhere"), "PATH": ""}
    assert choose(no_java, False, tmp_path, "4.3.0") is None


def test_archives_abandoned_mid_write_are_cleared_and_fresh_ones_kept(
    java: dict[str, str], tmp_path: Path
) -> None:
    folder = tmp_path / "cds"
    folder.mkdir()
    old, fresh = folder / "spark-x.111.writing", folder / "spark-x.222.writing"
    old.write_bytes(b"half")
    fresh.write_bytes(b"half")
    hours_ago = time.time() - 2 * ABANDONED_AFTER_S
    os.utime(old, (hours_ago, hours_ago))
    assert choose(java, False, tmp_path / "pyspark", "4.3.0") is not None
    assert not old.exists() and fresh.exists()


def test_each_class_path_has_its_own_archive(java: dict[str, str], tmp_path: Path) -> None:
    """The launcher's conf folder and extra entries are on the class path the archive is made for."""
    (tmp_path / "conf-a").mkdir()
    names = set()
    for env, extra in [
        ({}, ""),
        ({"SPARK_CONF_DIR": str(tmp_path / "conf-a")}, ""),
        ({"SPARK_CONF_DIR": str(tmp_path / "conf-b")}, ""),
        ({}, str(tmp_path / "lib" / "extra.jar")),
        ({"SPARK_DIST_CLASSPATH": str(tmp_path / "hadoop" / "common.jar")}, ""),
    ]:
        archive = choose({**java, **env}, False, tmp_path / "pyspark", "4.3.0", extra)
        assert archive is not None
        names.add(archive.path.name)
    assert len(names) == 5


@pytest.mark.parametrize("variable", ["SPARK_CONF_DIR", "HADOOP_CONF_DIR", "YARN_CONF_DIR"])
def test_no_archive_while_a_class_path_folder_holds_files(
    java: dict[str, str], tmp_path: Path, variable: str
) -> None:
    """The JVM cannot archive with such a folder on its class path: each run would try and fail."""
    conf = tmp_path / "conf"
    conf.mkdir()
    assert choose({**java, variable: str(conf)}, False, tmp_path / "pyspark", "4.3.0") is not None
    (conf / "spark-defaults.conf").write_text("spark.eventLog.enabled true\n")
    assert choose({**java, variable: str(conf)}, False, tmp_path / "pyspark", "4.3.0") is None


def test_no_archive_when_spark_homes_conf_folder_or_an_extra_entry_holds_files(
    java: dict[str, str], tmp_path: Path
) -> None:
    home = tmp_path / "spark"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "spark-env.sh").write_text("\n")
    assert choose({**java, "SPARK_HOME": str(home)}, False, tmp_path / "pyspark", "4.3.0") is None
    assert choose(java, False, tmp_path / "pyspark", "4.3.0", str(home / "conf")) is None
