"""The balance program itself: its state (:class:`~ferry.plan.balance.program.state.ProgramState`:
columns, rows and the topic data they are built from), the builders that add each kind of row to
that state (per topic, per broker, per rack, for pinned partitions, pooled idle brokers and full
pools), and :mod:`~ferry.plan.balance.program.integer_program`, whose ``solve`` builds them under a
setting, solves, splits the pools and reads the answer."""
