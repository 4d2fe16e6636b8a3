"""The inside of the trainguard strategy: the real handlers and adapters over a trace, on a virtual clock.

trainguard_strategy.py drives them on an in-process stand-in.

- `world`: the stand-in of one run (moto in process, the simulated SageMaker and Service Quotas, the
  Lambda handlers called as Lambda would) and trainguard's own clients, whose calls are counted.
  `clock`: the virtual clock. `in_process_clients`: boto3 clients that reach the simulated services
  without HTTP. `simulated_services`: SageMaker with the trace's quota walls; one job's alarms,
  evaluated. `trace_side`: what the trace's users, training scripts and SageMaker do (launches,
  checkpoints, log lines, GPU metrics), on the fleet side the chaos suite and the sandbox share
  (stand_in/fleet_side.py).
- `kernel`: event-driven time (processes that sleep or park), the minute ticks of the stall windows,
  the quota check's schedule.
- `job_life`: one trace job's life as a process; `life_state`: what its steps share; `endings`: what
  follows the end of a launch (trainguard's answer, or the person on call); `stall_windows`: a silent
  job's window and GPU data; `guard_actions`: trainguard's calls as actions in the job's timeline.
- `usage`: what trainguard used in the run, for its cost (`fleet.guard_cost`).
"""
