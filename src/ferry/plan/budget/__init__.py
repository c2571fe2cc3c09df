"""A plan within a budget (``--max-moves``, ``--max-bytes``): the step of the full, optimal plan
that removes the most imbalance per move or per byte while keeping the rack rule at every replica
it moves, measured as the replicas (or bytes) still out of place against the full plan."""
