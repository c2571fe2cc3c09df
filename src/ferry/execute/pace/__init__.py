"""``--pace auto``: the replication throttle and move concurrency chosen per broker, as a run goes,
from what the Admin API shows (copy rates, produce rates, ISR, ELR, min ISR): :mod:`.controller`
decides (pure), :mod:`.signals` turns readings into its inputs, :mod:`.pacer` runs it in the executor.
"""
