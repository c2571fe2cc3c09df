"""Preferred leaders over every planned partition: each broker leads an even share, current leaders
kept where they still hold a replica, and replica swaps of equal cost where the placement left no
even leader choice."""
