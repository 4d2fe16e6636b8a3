"""The fleet simulator: trainguard against the strategies a team has today, on one seeded trace of jobs.

A seeded trace of training jobs and faults, the strategies a team has today as models, trainguard itself,
and the report that compares them on the same trace (issue 5).

- `trace`: the seeded trace (jobs, faults); `catalogue`: instance types, prices and failure texts.
- `model`: one job's life on a virtual clock, in hours; the per-job record (`JobOutcome`); `Strategy`.
- `anchors`: no guard, SageMaker's RetryStrategy and Debugger's StalledTrainingRule, as models;
  `person`: the person on call, the same in every strategy.
- `trainguard_strategy`: trainguard, the real handlers and adapters on an in-process stand-in
  (`trainguard_run/`: the stand-in, event-driven time, each job's life, what trainguard used).
- `report`: the figures, defined once, and `run_all`; `guard_cost`: trainguard's own AWS cost, priced
  with `prices` (each list price with its source).
- `simulate`: the `trainguard simulate` command; `summary`: its figures in words and table rows;
  `stories`: each job's story in words; the pictures, drawn with matplotlib: `timeline` (no guard above
  trainguard) and `benchmark_chart` (the strategies' bars); `html_report`: all of it on one page;
  `progress`: how far a long command is, on stderr.

Pure, except `trainguard_strategy` and `trainguard_run/`: no AWS, no boto3, no clock but the virtual one.
"""
