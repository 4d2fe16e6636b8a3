"""trainguard's progress contract from a Hugging Face `transformers.Trainer`: one callback, no change to the loop.

    from trainguard_sdk.huggingface import TrainguardCallback

    trainer = Trainer(model=model, args=args, train_dataset=data, callbacks=[TrainguardCallback()])

It prints (docs/progress.md, "Callbacks for Hugging Face Trainer and Lightning"), from the world's process zero only:
`trainguard:start` when training begins; a `trainguard:progress step=N` line at most every `every_seconds` and on
every step the Trainer logs, with the loss it logs; and each evaluation and checkpoint save announced before it
starts (`trainguard:phase begin=evaluation|checkpoint expect=S`) and closed after it, S being twice the longest of
its kind so far (`first_checkpoint_expect_seconds`, 600, before the first save).

The hooks, from transformers' own source (src/transformers/trainer_callback.py and trainer.py, 5.25.0):
- `TrainerCallback.on_train_begin`, `on_step_begin`, `on_step_end`, `on_epoch_end`, `on_log` (`logs` holds the
  averaged `loss` of a training log), `on_evaluate` ("called after an evaluation phase"), `on_save` ("called after
  a checkpoint save") and `on_train_end`.
- There is no hook before an evaluation or a save: `DefaultFlowCallback`, always the first callback, sets
  `control.should_log`, `should_evaluate` and `should_save` in `on_step_end` (and `on_epoch_end`), and
  `Trainer._maybe_log_save_evaluate` then logs, evaluates and saves, in that order. So this callback, which runs
  after it, reads those flags: a step the Trainer will log is printed from `on_log` with its loss, and the phase
  that follows is announced after it; otherwise the step and the phase are printed from `on_step_end`.
- With `save_strategy="best"` the Trainer decides after the evaluation whether to save, with no hook between: that
  save is not announced (its end is not printed either), and the step limit judges it.

transformers is imported by this module only: `trainguard_sdk.progress` stays dependency-free.
"""

from __future__ import annotations

from typing import Any, TextIO

from transformers import TrainerCallback

from trainguard_sdk.callback_progress import (
    CHECKPOINT,
    EVALUATION,
    EVERY_SECONDS,
    FIRST_CHECKPOINT_EXPECT_SECONDS,
    TrainingProgress,
)


class TrainguardCallback(TrainerCallback):
    """Prints trainguard's progress contract from a `transformers.Trainer` (the module's docstring says what)."""

    def __init__(
        self,
        *,
        every_seconds: float = EVERY_SECONDS,
        first_checkpoint_expect_seconds: float | None = FIRST_CHECKPOINT_EXPECT_SECONDS,
        first_evaluation_expect_seconds: float | None = None,
        file: TextIO | None = None,
    ) -> None:
        self.progress = TrainingProgress(
            every_seconds=every_seconds,
            first_checkpoint_expect_seconds=first_checkpoint_expect_seconds,
            first_evaluation_expect_seconds=first_evaluation_expect_seconds,
            file=file,
        )
        self.awaiting_log = False  # the Trainer logs this step: on_log prints it, then announces what follows

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.is_world_process_zero:
            self.awaiting_log = False
            self.progress.started()

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.is_world_process_zero:
            self.progress.end_open()  # a phase announced and never run ends when the next step starts

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._after_step(state, control)

    def on_epoch_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._after_step(state, control)

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if not state.is_world_process_zero:
            return
        loss = (logs or {}).get("loss")  # a training log; an evaluation's has eval_loss, the last one train_loss
        if isinstance(loss, int | float):
            self.progress.stepped(state.global_step, loss, due=True)
        if self.awaiting_log:
            self.awaiting_log = False
            self._begin_planned(control)

    def on_evaluate(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.is_world_process_zero:
            self.progress.end(EVALUATION)
            if control.should_save:
                self.progress.begin(CHECKPOINT)

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.is_world_process_zero:
            self.progress.end(CHECKPOINT)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.is_world_process_zero:
            self.progress.end_open()

    def _after_step(self, state: Any, control: Any) -> None:
        """After DefaultFlowCallback has set what the Trainer does next: log, evaluate, save."""
        if not state.is_world_process_zero:
            return
        if control.should_log:
            self.awaiting_log = True
            return
        phase_follows = bool(control.should_evaluate or control.should_save)
        self.progress.stepped(state.global_step, due=phase_follows)
        self._begin_planned(control)

    def _begin_planned(self, control: Any) -> None:
        if control.should_evaluate:
            self.progress.begin(EVALUATION)  # a save after it is announced when it ends (on_evaluate)
        elif control.should_save:
            self.progress.begin(CHECKPOINT)
