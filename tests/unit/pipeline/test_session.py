"""Which Spark settings ferry asks for, decided without starting Spark; schemas in step with Arrow."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql.types import DataType, StructType

from ferry.errors import SparkError, UsageError
from ferry.pipeline.buckets import BLOB_ROWS
from ferry.pipeline.schemas import PLACED
from ferry.pipeline.session import (
    DEFAULT_DRIVER_MEMORY,
    DEFAULT_MASTER,
    SessionSettings,
    check_master,
    expected_slots,
    parse_properties,
    pick_master,
    probe_master,
    require_java,
    resolve,
    spark_defaults,
    standalone_addresses,
)


def test_defaults_are_quiet_local_mode() -> None:
    conf = resolve(SessionSettings(), {}, {})
    assert conf["spark.master"] == DEFAULT_MASTER == "local[2]"
    assert conf["spark.driver.memory"] == DEFAULT_DRIVER_MEMORY
    assert conf["spark.ui.enabled"] == "false"
    assert conf["spark.ui.showConsoleProgress"] == "false"
    assert "-Dlog4j2.configurationFile=file:" in conf["spark.driver.extraJavaOptions"]
    log_config = conf["spark.driver.extraJavaOptions"].split("file:")[1].split()[0]
    assert "rootLogger.level = warn" in Path(log_config).read_text()


def test_the_option_beats_the_environment_which_beats_spark_defaults() -> None:
    defaults = {"spark.master": "spark://defaults:7077", "spark.driver.memory": "2g"}
    env = {"SPARK_MASTER": "spark://env:7077", "SPARK_DRIVER_MEMORY": "3g"}
    assert resolve(SessionSettings(master="local[1]"), env, defaults)["spark.master"] == "local[1]"
    assert resolve(SessionSettings(), env, defaults)["spark.master"] == "spark://env:7077"
    assert resolve(SessionSettings(), {}, defaults)["spark.master"] == "spark://defaults:7077"
    assert resolve(SessionSettings(), env, defaults)["spark.driver.memory"] == "3g"
    assert resolve(SessionSettings(), {}, defaults)["spark.driver.memory"] == "2g"


def test_fast_start_and_extra_settings_are_added() -> None:
    conf = resolve(SessionSettings(fast_start=True, extra=(("spark.sql.shuffle.partitions", "4"),)), {}, {})
    assert "-XX:TieredStopAtLevel=1" in conf["spark.driver.extraJavaOptions"]
    assert conf["spark.sql.shuffle.partitions"] == "4"


@pytest.mark.parametrize(
    ("master", "slots"), [("local", 1), ("local[3]", 3), ("local[4,2]", 4), ("spark://h:7077", None)]
)
def test_the_slots_a_session_will_have_are_known_from_a_local_master(master: str, slots: int | None) -> None:
    assert expected_slots(SessionSettings(master=master), {}, {}) == slots


def test_every_core_of_local_star_counts_and_a_set_parallelism_beats_the_master() -> None:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert expected_slots(SessionSettings(master="local[*]"), {}, {}) == cores
    # The environment's master, as the session would take it.
    assert expected_slots(SessionSettings(), {"SPARK_MASTER": "local[5]"}, {}) == 5
    assert expected_slots(SessionSettings(), {}, {}) == 2  # the default master, local[2]
    defaults = {"spark.default.parallelism": "12", "spark.master": "spark://h:7077"}
    assert expected_slots(SessionSettings(), {}, defaults) == 12
    given = SessionSettings(master="local[2]", extra=(("spark.default.parallelism", "6"),))
    assert expected_slots(given, {}, defaults) == 6


def test_spark_defaults_conf_is_read_like_spark_reads_it(tmp_path: Path) -> None:
    (tmp_path / "spark-defaults.conf").write_text(
        "# comment\nspark.master   spark://h:7077\n\nspark.driver.memory=6g\n"
    )
    assert spark_defaults({"SPARK_CONF_DIR": str(tmp_path)}) == {
        "spark.master": "spark://h:7077",
        "spark.driver.memory": "6g",
    }
    assert spark_defaults({"SPARK_HOME": str(tmp_path / "none")}) == {}
    assert parse_properties("a b c\n") == {"a": "b c"}


def _arrow_of(spark_type: DataType) -> str:
    return {
        "string": "string",
        "int": "int32",
        "bigint": "int64",
        "binary": "binary",
        "double": "double",
        "array<int>": "list<item: int32>",
        "array<string>": "list<item: string>",
    }[spark_type.simpleString()]


def _same(spark: StructType, arrow: pa.Schema) -> None:
    assert spark.fieldNames() == arrow.names
    for field in spark.fields:
        assert _arrow_of(field.dataType) == str(arrow.field(field.name).type), field.name


def test_spark_schemas_match_the_arrow_schemas_they_exchange() -> None:
    _same(PLACED, BLOB_ROWS)


@pytest.mark.parametrize(
    "url",
    [
        "local",
        "local[1]",
        "local[*]",
        "local[4,2]",
        "local-cluster[2,1,1024]",
        "spark://127.0.0.1:7077",
        "spark://m1:7077,m2:7077",
        "spark://[::1]:7077",
        "yarn",
        "k8s://https://127.0.0.1:6443",
    ],
)
def test_master_urls_spark_takes_pass(url: str) -> None:
    check_master(url, "--spark-master")


@pytest.mark.parametrize(
    "url", ["bogus", "local[x]", "spark://host", "spark://host:port", "spark://", "mesos"]
)
def test_other_master_urls_are_usage_errors_naming_where_they_came_from(url: str) -> None:
    with pytest.raises(UsageError, match=r"^SPARK_MASTER: .* is not a Spark master URL$") as caught:
        check_master(url, "SPARK_MASTER")
    assert caught.value.exit_code == 2 and caught.value.hint and "spark://HOST:PORT" in caught.value.hint


def test_the_master_is_reported_with_its_source() -> None:
    defaults = {"spark.master": "spark://d:1"}
    assert pick_master(SessionSettings(master="local[1]"), {"SPARK_MASTER": "yarn"}, defaults) == (
        "local[1]",
        "--spark-master",
    )
    assert pick_master(SessionSettings(), {"SPARK_MASTER": "yarn"}, defaults) == ("yarn", "SPARK_MASTER")
    assert pick_master(SessionSettings(), {}, defaults)[1] == "spark.master of spark-defaults.conf"
    assert pick_master(SessionSettings(), {}, {}) == (DEFAULT_MASTER, "the default master")


def test_standalone_addresses_cover_standby_masters_and_ipv6() -> None:
    assert standalone_addresses("spark://a:7077,b:7078") == [("a", 7077), ("b", 7078)]
    assert standalone_addresses("spark://[::1]:7077") == [("::1", 7077)]
    assert standalone_addresses("local[2]") == []


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_a_master_nobody_listens_on_is_a_spark_error_at_once() -> None:
    port = _closed_port()
    with pytest.raises(
        SparkError, match=rf"cannot reach the Spark master spark://127.0.0.1:{port}: "
    ) as caught:
        probe_master(f"spark://127.0.0.1:{port}", timeout_s=2.0)
    assert caught.value.exit_code == 7


def test_one_listening_master_of_several_is_enough() -> None:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        probe_master(f"spark://127.0.0.1:{_closed_port()},127.0.0.1:{port}", timeout_s=2.0)
    probe_master("local[2]")  # nothing to reach


def test_no_java_is_a_spark_error_naming_java_home(tmp_path: Path) -> None:
    with pytest.raises(SparkError, match=r"JAVA_HOME=.*nowhere has no bin/java"):
        require_java({"JAVA_HOME": str(tmp_path / "nowhere")})
    with pytest.raises(SparkError, match="no java on PATH"):
        require_java({"PATH": str(tmp_path)})
