"""What a placement looks like, before and after: spreads per broker, topic and rack, rack
violations, replicas off target brokers, and the plan's report built from them."""
