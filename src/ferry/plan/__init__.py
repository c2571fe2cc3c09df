"""The pure planning kernel: quotas, minimal-movement placement, global balance, leaders, bounds."""
