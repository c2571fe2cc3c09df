"""Which Spark settings ferry asks for, decided without starting Spark; schemas in step with Arrow."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from pyspark.sql.types import DataType, StructType

from ferry.pipeline.kernel import DEMAND_ARROW, PLACED_ARROW
from ferry.pipeline.schemas import DEMANDS, PLACED
from ferry.pipeline.session import (
    DEFAULT_DRIVER_MEMORY,
    DEFAULT_MASTER,
    SessionSettings,
    parse_properties,
    resolve,
    spark_defaults,
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
    assert conf["spark.sql.adaptive.coalescePartitions.enabled"] == "false"


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
    }[spark_type.simpleString()]


def _same(spark: StructType, arrow: pa.Schema) -> None:
    assert spark.fieldNames() == arrow.names
    for field in spark.fields:
        assert _arrow_of(field.dataType) == str(arrow.field(field.name).type), field.name


def test_spark_schemas_match_the_arrow_schemas_they_exchange() -> None:
    _same(DEMANDS, DEMAND_ARROW)
    _same(PLACED, PLACED_ARROW)
