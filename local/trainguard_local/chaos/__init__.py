"""The chaos suite: a fleet replayed on the stand-in under faults, then an audit of what trainguard did.

- replay.py runs one seed; replayed_fleet.py holds the users and SageMaker, jobs_truth.py each job's record,
  evidence.py the logs, GPUs and alarm events (from simulation/'s activity of each launch);
- deliveries.py and lambda_runtime.py: at-least-once delivery and Lambda's asynchronous invocation;
- call_faults.py and error_responses.py: the faults on AWS calls; dead_letters.py and stack_wiring.py: the
  dead-letter queues, their alarms from the synthesized template, the redrive;
- audit.py judges the run against jobs_truth.py; chaos_report.py prints its figures (__main__.py).
"""
