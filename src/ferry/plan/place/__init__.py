"""Once the balance pass has decided each broker's quota, topic by topic: which replicas leave
(pinned partitions' decided drops, then the smallest over-quota replicas) and where the open slots
go, keeping as many replicas in place as the quotas allow; and the separate plan for replacing
brokers one for one."""
