"""One local Spark session for every Spark test (a JVM per session costs 5-10 s; one per run is enough).

Started through ferry's own factory, with test-sized settings: local[2], 1g of driver memory and the
fast-start JVM flags. Tests that need their own Spark process (the standalone cluster) run ``ferry``
in a subprocess instead.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from ferry.pipeline.session import SessionSettings, start_session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = start_session(
        SessionSettings(master="local[2]", driver_memory="1g", app_name="ferry-tests", fast_start=True)
    )
    yield session
    session.stop()
