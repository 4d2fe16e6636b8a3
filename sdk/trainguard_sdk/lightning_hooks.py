"""The hooks of trainguard's Lightning callback, shared by the two packages Lightning ships as: `lightning`
(`lightning.pytorch`, trainguard_sdk.lightning) and `pytorch_lightning` (trainguard_sdk.pytorch_lightning). Each
Trainer accepts only its own package's `Callback`, so each module joins these hooks to its own base class; this
module imports neither.

What it prints (docs/progress.md, "Callbacks for Hugging Face Trainer and Lightning"), from the global zero rank
only: `trainguard:start` in `on_train_start`; a `trainguard:progress step=N loss=X` line in `on_train_batch_end` at
most every `every_seconds` (N: `trainer.global_step`, the optimizer steps taken; X: the batch's loss as
`training_step` returned it); each validation run during training as the phase `validation`, and each checkpoint
write as the phase `checkpoint`, announced with twice the longest of its kind so far.

The hooks, from Lightning's own source (src/lightning/pytorch/callbacks/callback.py, trainer/trainer.py and
callbacks/model_checkpoint.py, 2.6.6):
- `on_train_batch_end(trainer, pl_module, outputs, batch, batch_idx)`: "The value outputs["loss"] here will be the
  normalized value w.r.t accumulate_grad_batches", so it is multiplied back by `trainer.accumulate_grad_batches`.
- `on_validation_start` / `on_validation_end`; the sanity check before training (`trainer.sanity_checking`) comes
  before the start marker, under trainguard's start cutoff, and is not announced.
- `on_save_checkpoint(trainer, pl_module, checkpoint)` is called by `Trainer.save_checkpoint` through
  `dump_checkpoint`, before `strategy.save_checkpoint` writes the file, and no callback hook follows the write. So
  the save is announced there, and ended at the next hook the Trainer calls (`on_train_batch_start`,
  `on_validation_start`, `on_train_epoch_end`, `on_train_end`, `on_exception`): Lightning moves ModelCheckpoint to
  the end of the callback list (`_CallbackConnector._reorder_callbacks`), so it saves after this callback's hook of
  the same name, and the save ends at the following one.
"""

from __future__ import annotations

from typing import Any, TextIO

from trainguard_sdk.callback_progress import (
    CHECKPOINT,
    EVERY_SECONDS,
    FIRST_CHECKPOINT_EXPECT_SECONDS,
    VALIDATION,
    TrainingProgress,
)


class LightningProgressHooks:
    """Lightning's Callback hooks that print trainguard's progress contract; joined to a `Callback` base class."""

    def __init__(
        self,
        *,
        every_seconds: float = EVERY_SECONDS,
        first_checkpoint_expect_seconds: float | None = FIRST_CHECKPOINT_EXPECT_SECONDS,
        first_validation_expect_seconds: float | None = None,
        file: TextIO | None = None,
    ) -> None:
        super().__init__()
        self.progress = TrainingProgress(
            every_seconds=every_seconds,
            first_checkpoint_expect_seconds=first_checkpoint_expect_seconds,
            first_evaluation_expect_seconds=first_validation_expect_seconds,
            file=file,
        )

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        if trainer.is_global_zero:
            self.progress.started()

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        self._saved(trainer)

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        if trainer.is_global_zero and trainer.global_step > 0:  # step 0: no optimizer step taken yet
            self.progress.stepped(trainer.global_step, _batch_loss(outputs, trainer.accumulate_grad_batches))

    def on_validation_start(self, trainer: Any, pl_module: Any) -> None:
        self._saved(trainer)
        if trainer.is_global_zero and not trainer.sanity_checking:
            self._last_step_then(trainer, VALIDATION)

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        if trainer.is_global_zero:
            self.progress.end(VALIDATION)

    def on_save_checkpoint(self, trainer: Any, pl_module: Any, checkpoint: dict[str, Any]) -> None:
        if trainer.is_global_zero:
            self._last_step_then(trainer, CHECKPOINT)

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        self._saved(trainer)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self._saved(trainer)

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        if trainer.is_global_zero:
            self.progress.end_open()

    def _saved(self, trainer: Any) -> None:
        """A checkpoint announced in on_save_checkpoint has been written by the time the Trainer calls this hook."""
        if trainer.is_global_zero:
            self.progress.end(CHECKPOINT)

    def _last_step_then(self, trainer: Any, phase: str) -> None:
        """The last step is printed before a phase (a step line inside it would not be the loop's own rhythm)."""
        if trainer.global_step > 0:
            self.progress.stepped(trainer.global_step, due=True)
        self.progress.begin(phase)


def _batch_loss(outputs: Any, accumulate_grad_batches: int) -> float | None:
    """The loss `training_step` returned (a tensor, or a dict's "loss"), undoing Lightning's division by the
    accumulation; None when there is none (a step `training_step` skipped by returning None)."""
    loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
    if loss is None:
        return None
    try:
        return float(loss) * accumulate_grad_batches
    except (TypeError, ValueError):
        return None  # a loss of more than one element
