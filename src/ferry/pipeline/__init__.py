"""The planning pipeline on Apache Spark: snapshots (one cluster or a fleet) in, plans and reports out.

The only package that imports pyspark (an import-linter contract holds it to that). Nothing here
starts Spark at import time: :func:`ferry.pipeline.session.start_session` does, when a command asks
(:mod:`early_session`: in a thread of its own while the command reads a big snapshot).
Stages: :mod:`extract` (snapshots to DataFrames), :mod:`transforms` (the kernel's per-topic phases per
bucket of topics), :mod:`job` (the driver's global phases between them), :mod:`load` (files out).
"""
