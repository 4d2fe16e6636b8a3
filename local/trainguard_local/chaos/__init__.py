"""The chaos suite: the fleet's world under delivery and call faults, then an audit of what trainguard did."""
