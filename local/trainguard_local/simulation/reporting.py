"""How each trace job reports its progress (issue 27): trainguard's progress contract, a framework's own lines, a rule
the job declares by tags, or nothing. The class decides the words of the job's lines (activity.py says when a line
comes and what it is: a step, a phase's begin or end, the start, a heartbeat); what trainguard reads from them is the
product's own reader (lambdas/trainguard/domain/progress_lines.py), never a copy of it here.

The shares are the issue's assumption, kept so that the figures stay comparable: 30% of jobs report nothing, the
other 70% split evenly among the contract, a framework's own lines and a tag rule (mainstream frameworks print step
lines by default). Which frameworks: those whose lines carry a step (Megatron-LM, torchtitan, DeepSpeed, NeMo), one
in four each (an assumption); Hugging Face Trainer's lines carry none (progress_watch.READERS_WITHOUT_STEPS), so a
Trainer job that prints only those reports nothing here, and one with trainguard's callback reports the contract.

What each announces, from the framework's own source (each line below is a fixture line of
tests/fixtures/progress_lines/, with its source there):
- the contract announces every long phase, a save and an evaluation, with its expected seconds (trainguard_sdk's
  helper and callbacks do; an assumption that the job's estimate, learned from its earlier phases, is the phase's
  length: the simulator's phases of one job repeat the same length);
- Megatron-LM and torchtitan announce a save's begin and end; DeepSpeed its begin only; NeMo its end only; none
  announces an evaluation (Megatron prints its validation loss after it, NeMo its validation iterations without a
  step: both are modelled as silent here);
- a tag rule declares the step line only (like HyperPod's `logPattern`), and announces nothing.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from enum import StrEnum


class Reporting(StrEnum):
    PROGRESS = "progress"  # trainguard's progress contract
    FRAMEWORK = "framework"  # a framework's own lines
    TAG_RULE = "tag_rule"  # a progress-pattern tag
    NONE = "none"


REPORTING_SHARES: dict[Reporting, float] = {
    Reporting.NONE: 0.30,
    Reporting.PROGRESS: 0.70 / 3,
    Reporting.FRAMEWORK: 0.70 / 3,
    Reporting.TAG_RULE: 0.70 / 3,
}


class LineKind(StrEnum):
    STEP = "step"
    START = "start"  # as training starts
    PHASE_BEGIN = "phase begin"  # just before a save or an evaluation
    SAVE_END = "save end"  # a save ended, and an evaluation follows without a line
    PHASE_END = "phase end"  # the phase ended: the job logs again
    HEARTBEAT = "heartbeat"  # a background thread's line: the step does not advance (a livelock)


@dataclass(frozen=True)
class LineToken:
    """What a line is (activity.py); the dialect words it."""

    kind: LineKind
    step: int = 0  # the job's step at that moment
    phase: str = ""  # "checkpoint" or "evaluation" (PHASE_BEGIN)
    expect_seconds: int = 0  # the phase's length (PHASE_BEGIN; SAVE_END: the evaluation's that follows)
    loss: float | None = None  # the loss its step line prints (None: loss_at(step); NaN once a run has diverged)
    batch: int = 0  # the batch size its step line prints, where the dialect prints one


@dataclass(frozen=True)
class Dialect:
    """The words of one way of reporting. Formats take `step`, `loss`, `batch`, `expect` and `samples`; None: not
    printed. `batch`: the batch size its lines print at first (0: they print none, so its owner cannot change it
    during a run without its pace being read as slower, docs/pace.md)."""

    name: str
    step: str
    start: str | None = None
    save_begin: str | None = None
    save_end: str | None = None
    eval_begin: str | None = None
    eval_end: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    batch: int = 0
    # The part of its step line it leaves out when the loss is NaN or infinite (Megatron-LM's training_log prints a
    # loss only `if avg > 0.0`, as most of its versions and forks do): '' when it prints the NaN.
    loss_part: str = ""

    @property
    def shows_a_nan_loss(self) -> bool:
        """Whether a diverged run's step lines print its NaN loss (DeepSpeed's print no loss, Megatron-LM's leave it
        out): the only sign of a divergence in its lines."""
        return "{loss" in self.step and not self.loss_part


_PREFIX_TITAN = "[rank0]:[titan] 2026-12-06 00:00:00,000 - root - INFO - "
_PREFIX_DS = "[2026-12-06 00:00:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] "
_MEGATRON_LOSS = " lm loss: {loss:.6E} |"
CONTRACT = Dialect(
    "contract",
    step="trainguard:progress step={step} loss={loss:.4f} batch={batch}",
    start="trainguard:start",
    save_begin="trainguard:phase begin=checkpoint expect={expect}",
    save_end="trainguard:phase end=checkpoint",
    eval_begin="trainguard:phase begin=evaluation expect={expect}",
    eval_end="trainguard:phase end=evaluation",
    batch=256,
)
FRAMEWORKS: tuple[Dialect, ...] = (
    Dialect(  # megatron.json: training_log, print_datetime, save_checkpoint
        "megatron",
        step=" iteration {step:8d}/ 1000000 | consumed samples: {samples:12d} | "
        "elapsed time per iteration (ms): 1000.0 | learning rate: 3.000E-04 | global batch size: {batch:5d} |"
        + _MEGATRON_LOSS
        + " loss scale: 1.0 | "
        "grad norm: 0.811 | number of skipped iterations:   0 | number of nan iterations:   0 |",
        start="[before the start of training step] datetime: 2026-12-06 00:00:00",
        save_begin="saving checkpoint at iteration {step:7d} to /opt/ml/checkpoints in torch_dist format",
        save_end="  successfully saved checkpoint from iteration {step:7d} to /opt/ml/checkpoints [ t 1/1, p 1/1 ]",
        batch=1024,
        loss_part=_MEGATRON_LOSS,
    ),
    Dialect(  # torchtitan.json
        "torchtitan",
        step=_PREFIX_TITAN + "step: {step:2d}  loss: {loss:8.5f}  grad_norm:  0.8319  memory:  9.46GiB(64.99%)  "
        "tps: 7,282  tflops: 0.52  mfu: 0.17%",
        start=_PREFIX_TITAN + "Training starts at step 1.",
        save_begin=_PREFIX_TITAN + "Saving the checkpoint.",
        save_end=_PREFIX_TITAN + "Finished saving the checkpoint in 12.00 seconds.",
    ),
    Dialect(  # deepspeed.json: _report_progress, TorchCheckpointEngine.create
        "deepspeed",
        step=_PREFIX_DS + "step={step}, skipped=0, lr=[5e-05], mom=[[0.9, 0.999]]",
        save_begin=_PREFIX_DS + "[Torch] Checkpoint global_step{step} is about to be saved!",
    ),
    Dialect(  # nemo.json: ProgressPrinter, iter_finalize_fn
        "nemo",
        step="Training epoch 0, iteration {step}/1000000 | lr: 0.0001 | global_batch_size: {batch} | "
        "global_step: {step} | reduced_train_loss: {loss:.4g} | train_step_timing in s: 0.3964",
        save_end="[NeMo I 2026-12-06 00:00:00 nemo_logging:393] Successfully saved checkpoint from iteration "
        "{step:7d} to /opt/ml/checkpoints/step={step}.ckpt",
        batch=8,
    ),
)
# A loop's own step line, and the rule its owner declares (progress_rule.py's template; a TagValue may hold no '|').
TAG_RULE = Dialect(
    "tag rule",
    step="[rank0] iter: {step} train_loss: {loss:.4f} lr: 0.0003",
    tags={"trainguard:progress-pattern": "iter: @step train_loss: @loss"},
)
# Today's lines, read as nothing: a step and a loss in words no reader knows, and Hugging Face Trainer's phase line
# for a job that announces its phases (rhythm.py).
NOTHING = Dialect("nothing", step="step {step} loss {loss:.4f}")
HEARTBEAT_LINE = "heartbeat: rank 0 alive, phase=training"  # marin-community/marin#7344: a thread talking on


@dataclass(frozen=True)
class JobReporting:
    reporting: Reporting = Reporting.NONE
    dialect: Dialect = NOTHING

    @property
    def tags(self) -> dict[str, str]:
        return dict(self.dialect.tags)


def draw_reporting(rng: random.Random) -> JobReporting:
    """One job's way of reporting, by REPORTING_SHARES."""
    classes, weights = zip(*REPORTING_SHARES.items(), strict=True)
    reporting = rng.choices(classes, weights=weights)[0]
    dialect = {
        Reporting.PROGRESS: CONTRACT,
        Reporting.FRAMEWORK: rng.choice(FRAMEWORKS),
        Reporting.TAG_RULE: TAG_RULE,
        Reporting.NONE: NOTHING,
    }[reporting]
    return JobReporting(reporting, dialect)


def loss_at(step: int) -> float:
    return 1.5 + 1.0 / (max(step, 0) + 1)


def word(dialect: Dialect, token: LineToken, phase_line: str = "") -> list[str]:
    """The lines `token` is printed as (none, one or two). `phase_line`: a reporting-nothing job's own words before
    a phase (rhythm.py's Hugging Face lines), '' when it prints a step line there."""
    step, batch = token.step, token.batch or dialect.batch
    loss = loss_at(step) if token.loss is None else token.loss

    def fill(text: str | None, expect: int = 0) -> str | None:
        if text is None:
            return None
        if dialect.loss_part and not math.isfinite(loss):
            text = text.replace(dialect.loss_part, "")
        return text.format(step=step, loss=loss, batch=batch, expect=expect, samples=step * batch)

    if token.kind is LineKind.HEARTBEAT:
        return [HEARTBEAT_LINE]
    if token.kind is LineKind.START and dialect.start is not None:
        return [dialect.start]
    if token.kind is LineKind.PHASE_BEGIN:
        begin = dialect.save_begin if token.phase == "checkpoint" else dialect.eval_begin
        if dialect is NOTHING and phase_line:
            return [phase_line]
        return [line for line in (fill(dialect.step), fill(begin, token.expect_seconds)) if line]
    if token.kind is LineKind.SAVE_END:
        lines = [fill(dialect.save_end), fill(dialect.eval_begin, token.expect_seconds)]
        return [line for line in lines if line]
    if token.kind is LineKind.PHASE_END:
        end = dialect.save_end if token.phase == "checkpoint" else dialect.eval_end
        return [line for line in (fill(end), fill(dialect.step)) if line]
    return [str(fill(dialect.step))]
