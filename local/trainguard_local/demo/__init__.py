"""`make demo`: trainguard at work on the fleet simulator and on the stand-in, without an AWS account."""
