"""Passes that make the balance program's answer hold exactly: the most replicas each topic can keep
under its quotas (a small flow per topic), topics whose quotas cannot keep what the program counted
solved again partition by partition a chunk at a time, and on small inputs the passes fall short on
the whole plan as one integer program (the fewest moves any plan meeting every rule can make)."""
