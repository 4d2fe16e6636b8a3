"""Tests of the local tools (local/trainguard_local): the stand-in, the fleet simulator, chaos, the sandbox, the demos,
the local deploy and the lint, apart from the product's own tests."""
