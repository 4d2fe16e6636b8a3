"""The chaos suite: a fleet replayed on the stand-in under faults, then an audit of what trainguard did."""
