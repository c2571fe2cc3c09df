"""Byte balance (``--balance bytes``): each target broker's target bytes and band, water-filled over
racks under the rack rule, and the moves that bring every broker into its band moving the fewest
bytes."""
