"""The chaos suite: a fleet replayed on the stand-in under faults, then an audit of what trainguard did.

A fleet replayed on the local stand-in (docs/local-tools.md), with the production handlers, under duplicated
and late events, faults on every AWS call, killed processes and a poison event; then an audit of what
trainguard did against what happened.

- replay.py: one run, phase by phase; on the simulation's clock and kernel;
- world.py: the users and SageMaker (jobs from the fleet trace); evidence.py and stall_truth.py: logs, GPUs
  and alarm events;
- deliveries.py and lambda_runtime.py: at-least-once delivery and Lambda's asynchronous invocation;
  rule_queues.py: what the stack's rules matched;
- faults.py and error_responses.py: the botocore-level faults; dead_letters.py and stack_wiring.py: the
  dead-letter queues, their alarms from the synthesized template, the redrive;
- audit.py and report.py: the rules and the figures; `python -m trainguard_local.chaos` runs it.
"""
