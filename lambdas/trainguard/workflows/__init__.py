"""Use cases: the order of the steps for one event, acting through ports.

No boto3 here either: the ports are passed in (real adapters in Lambda, in-memory fakes in tests)."""
