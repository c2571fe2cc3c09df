"""Before anything is balanced, topic by topic: the goal checked against the snapshot and the
brokers and topics in scope; each topic's quota (the base load every target broker takes and the
extras left to hand out, under the rack rule); and what the topic asks of the global balance pass
(:class:`~ferry.plan.prepare.demand.TopicDemand`): the replicas each broker holds, the partitions
pinned to keep only some of them, and the groups of partitions that only shed replicas."""
