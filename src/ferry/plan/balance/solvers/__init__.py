"""Solving a built program: as a min-cost flow when every row is a network row (a plain
rebalance), else with HiGHS through its own binding, split into independent parts, each solved
again from the basis its last solve ended on."""
