"""The fleet simulator: a seeded trace of training jobs and faults, the strategies a team has today as
models, and the report that compares them on the same trace (issue 5).

- `trace`: the seeded trace (jobs, faults); `catalogue`: instance types, prices and failure texts.
- `model`: one job's life on a virtual clock, in hours; the per-job record (`JobOutcome`); `Strategy`.
- `anchors`: no guard, SageMaker's RetryStrategy and Debugger's StalledTrainingRule, as models.
- `report`: the figures, defined once, and `run_all`.

Pure: no AWS, no boto3, no clock but the virtual one.
"""
