"""The fleet benchmark: trainguard against the strategies a team has today (anchors.py), on one seeded trace."""
