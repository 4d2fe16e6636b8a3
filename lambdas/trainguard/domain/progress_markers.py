"""The lines frameworks already print, read with no change to a job's code.

Each marker below is the format string of the framework's own source (cited beside it) or of a line its own code
printed; tests/fixtures/progress_lines/ holds the real lines each is checked on, with their sources, and
docs/progress.md says per framework what can and cannot be read. A step line reports `step` (and `loss` when the
line has it); a phase line reports the start or end of a checkpoint save or load, or that an evaluation is going on
(NeMo's "Validation: iteration N/M"). What no marker reads, such as a heartbeat or a bare tqdm bar (Hugging Face's
evaluation bar has the same shape as its training bar), reads as nothing. Every pattern is bounded (no repetition
inside an unbounded repetition, no unbounded "any character"), so each runs in time linear in the line, which is cut
to MAX_LINE_CHARS first.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from trainguard.domain.progress_reading import NUMBER, STEP, Phase, ProgressReading, Reader, read_number

CHECKPOINT = "checkpoint"  # the phase name of a checkpoint save
CHECKPOINT_LOAD = "checkpoint_load"
EVALUATION = "evaluation"
# The phases a reader announces and no line of it ever ends (DeepSpeed's save; NeMo's validation lines, which only say
# it goes on): the job's next advancing step ends them, its steps stop between a save's begin and that step.
PHASES_NO_LINE_ENDS = frozenset({(Reader.DEEPSPEED, CHECKPOINT), (Reader.NEMO, EVALUATION)})


def _pattern(text: str) -> re.Pattern[str]:
    return re.compile(text.replace("{STEP}", STEP).replace("{NUMBER}", NUMBER))


def _phase(reader: Reader, phase: Phase, name: str) -> ProgressReading:
    return ProgressReading(phase=phase, phase_name=name, source=reader)


def _first(text: str, marks: tuple[tuple[re.Pattern[str], ProgressReading], ...]) -> ProgressReading | None:
    """The reading of the first of `marks` (a pattern, and what a line it matches says) found in `text`."""
    for pattern, reading in marks:
        if pattern.search(text):
            return reading
    return None


def _loss(pattern: re.Pattern[str], text: str) -> float | None:
    found = pattern.search(text)
    return read_number(found[1]) if found else None


def _integer(pattern: re.Pattern[str], text: str) -> int | None:
    found = pattern.search(text)
    return int(found[1]) if found else None


# --- Megatron-LM: megatron/training/training.py (training_log; print_datetime), megatron/training/checkpointing.py
# (save_checkpoint; load_checkpoint), NVIDIA/Megatron-LM at d98e8a64ddf34856e74b24714e3bedb2f5a39553. ---
_MEGATRON_STEP = _pattern(r"(?<!Validation: )(?<!Testing: )\biteration\s{1,20}({STEP})/\s{0,20}[0-9]{1,15}\s{0,4}\|")
# A NaN loss is left out of the line (`if avg > 0.0`). An iteration the loss scale skipped (fp16) adds nothing to the
# loss and counts in `number of nan iterations` when its loss was NaN or infinite (training_log's `got_nan`): a line
# with no loss of any name whose count is above 0 skipped every iteration since the last, on a NaN among them, and
# reads as a NaN loss. A bf16 run skips nothing and counts nothing: its NaN leaves only the loss out (no loss read).
_MEGATRON_LOSS = _pattern(r"\|\s{0,4}lm[ _]loss:\s{0,4}({NUMBER})\s{0,4}\|")
_MEGATRON_ANY_LOSS = _pattern(r"\|\s{0,4}[A-Za-z0-9 _-]{0,40}loss:\s{0,4}{NUMBER}\s{0,4}\|")
_MEGATRON_NAN_ITERATIONS = _pattern(r"\|\s{0,4}number of nan iterations:\s{0,12}({STEP})\s{0,4}\|")
_MEGATRON_BATCH = _pattern(r"\|\s{0,4}global batch size:\s{0,12}({STEP})\s{0,4}\|")
_MEGATRON_MARKS = (
    (re.compile(r"\bsaving checkpoint at iteration\s"), _phase(Reader.MEGATRON, Phase.BEGIN, CHECKPOINT)),
    (re.compile(r"\bsuccessfully saved (?:local )?checkpoint (?:from|at) iteration\s"),
     _phase(Reader.MEGATRON, Phase.END, CHECKPOINT)),
    (re.compile(r"\bloading (?:release )?(?:distributed )?checkpoint from "),
     _phase(Reader.MEGATRON, Phase.BEGIN, CHECKPOINT_LOAD)),
    (re.compile(r"\bsuccessfully loaded checkpoint from "), _phase(Reader.MEGATRON, Phase.END, CHECKPOINT_LOAD)),
    (re.compile(r"\[before the start of training step\] datetime: "),
     ProgressReading(start=True, source=Reader.MEGATRON)),
)  # fmt: skip


def _megatron(text: str) -> ProgressReading | None:
    if step := _MEGATRON_STEP.search(text):
        loss, batch = _loss(_MEGATRON_LOSS, text), _integer(_MEGATRON_BATCH, text)
        if not _MEGATRON_ANY_LOSS.search(text) and (_integer(_MEGATRON_NAN_ITERATIONS, text) or 0) > 0:
            loss = math.nan
        return ProgressReading(step=int(step[1]), loss=loss, batch=batch, source=Reader.MEGATRON)
    return _first(text, _MEGATRON_MARKS)


# --- NeMo 2: nemo/lightning/pytorch/callbacks/progress_printer.py (ProgressPrinter.on_train_batch_end: "Training
# epoch E, iteration N/T | metric: value | ..."), nemo/lightning/io/pl.py (iter_finalize_fn), NVIDIA/NeMo at
# 8cfedd7203462cb251a914e700e5605444277561. NeMo prints nothing before a save: only its end. Through a validation
# or a test it prints "Validation: iteration N/M" ("Testing: ...") per batch (on_validation_batch_end,
# on_test_batch_end): an evaluation going on, read as its begin (progress_watch keeps the first one's time). ---
_NEMO_STEP = _pattern(r"\bTraining epoch [0-9]{1,9}, iteration ({STEP})/[0-9]{1,15}")
_NEMO_GLOBAL_STEP = _pattern(r"\|\s{0,4}global_step: ({STEP})\b")
_NEMO_BATCH = _pattern(r"\|\s{0,4}global_batch_size: ({STEP})\b")
_NEMO_LOSS = _pattern(r"\|\s{0,4}(?:reduced_)?train_loss: ({NUMBER})")
_NEMO_MARKS = (
    (re.compile(r"\bSuccessfully saved checkpoint from iteration\s"), _phase(Reader.NEMO, Phase.END, CHECKPOINT)),
    (re.compile(r"(?:^|\s)(?:Validation|Testing): iteration [0-9]{1,15}/[0-9]{1,15}\b"),
     _phase(Reader.NEMO, Phase.BEGIN, EVALUATION)),
)  # fmt: skip


def _nemo(text: str) -> ProgressReading | None:
    if step := _NEMO_STEP.search(text):
        global_step = _NEMO_GLOBAL_STEP.search(text)
        number = int(global_step[1]) if global_step else int(step[1])
        loss, batch = _loss(_NEMO_LOSS, text), _integer(_NEMO_BATCH, text)
        return ProgressReading(step=number, loss=loss, batch=batch, source=Reader.NEMO)
    return _first(text, _NEMO_MARKS)


# --- torchtitan: torchtitan/components/metrics.py (MetricsProcessor.log: "step: N  loss: X  grad_norm: ...";
# log_validation: "validate step: N  loss: X ..."), torchtitan/components/checkpointer/dcp.py (save), torchtitan/
# trainer.py ("Training starts at step N"), pytorch/torchtitan at b5bcd76c66d0acb1a08b176d9639425bc55e0b2a. ---
_TITAN_STEP = _pattern(r"(?<!validate )\bstep:\s{1,8}({STEP})\s{1,8}loss:\s{1,8}({NUMBER})")
_TITAN_MARKS = (
    (re.compile(r"\b(?:Saving|Staging) the checkpoint\."), _phase(Reader.TORCHTITAN, Phase.BEGIN, CHECKPOINT)),
    (re.compile(r"\bFinished (?:saving|staging) the checkpoint in |\bLast step checkpoint completed in "),
     _phase(Reader.TORCHTITAN, Phase.END, CHECKPOINT)),
    (re.compile(r"\bTraining starts at step [0-9]"), ProgressReading(start=True, source=Reader.TORCHTITAN)),
)  # fmt: skip


def _torchtitan(text: str) -> ProgressReading | None:
    if step := _TITAN_STEP.search(text):
        return ProgressReading(step=int(step[1]), loss=read_number(step[2]), source=Reader.TORCHTITAN)
    return _first(text, _TITAN_MARKS)


# --- DeepSpeed: deepspeed/runtime/engine.py (_report_progress: "step={step}, skipped={n}, lr={lr}, mom={mom}"),
# deepspeed/utils/timer.py (ThroughputTimer.stop: "epoch=E/micro_step=M/global_step=G, ..."), deepspeed/runtime/pipe/
# engine.py ("steps: N loss: X iter time (s): ..."), deepspeed/runtime/checkpoint_engine/torch_checkpoint_engine.py
# (create: "[Torch] Checkpoint TAG is about to be saved!"), deepspeedai/DeepSpeed at
# edaa7221267243c7be7fb49c5d5f5c4fb97b4641. DeepSpeed prints no end of a save (its "is ready now" is commented out). ---
_DEEPSPEED_STEPS = (
    _pattern(r"\bstep=({STEP}), skipped=[0-9]{1,15}, lr="),
    _pattern(r"\bepoch=[0-9]{1,9}/micro_step=[0-9]{1,15}/global_step=({STEP}),"),
)
_DEEPSPEED_PIPE_STEP = _pattern(r"\bsteps: ({STEP}) loss: ({NUMBER}) ")
_DEEPSPEED_MARKS = (
    (re.compile(r"\[Torch\] Checkpoint \S{1,256} is about to be saved!"),
     _phase(Reader.DEEPSPEED, Phase.BEGIN, CHECKPOINT)),
)  # fmt: skip


def _deepspeed(text: str) -> ProgressReading | None:
    if step := _DEEPSPEED_PIPE_STEP.search(text):
        return ProgressReading(step=int(step[1]), loss=read_number(step[2]), source=Reader.DEEPSPEED)
    for pattern in _DEEPSPEED_STEPS:
        if step := pattern.search(text):
            return ProgressReading(step=int(step[1]), source=Reader.DEEPSPEED)
    return _first(text, _DEEPSPEED_MARKS)


# --- examples/train.py (this repository): "step=%d/%d loss=%.9g elapsed=%.1fs", "checkpoint step=%d written to %s
# in %.2fs" (after the write: it announces none before), "no checkpoint in %s: starting from step 0", "resuming
# from %s (step %d)". ---
_EXAMPLE_STEP = _pattern(r"\bstep=({STEP})/[0-9]{1,15} loss=({NUMBER}) elapsed=")
_EXAMPLE_MARKS = (
    (re.compile(r"\bcheckpoint step=[0-9]{1,15} written to "), _phase(Reader.EXAMPLES_TRAIN, Phase.END, CHECKPOINT)),
    (re.compile(r": starting from step 0$"), ProgressReading(start=True, source=Reader.EXAMPLES_TRAIN)),
    (re.compile(r" \(step [0-9]{1,15}\)$"), ProgressReading(start=True, source=Reader.EXAMPLES_TRAIN)),
)


def _examples_train(text: str) -> ProgressReading | None:
    if step := _EXAMPLE_STEP.search(text):
        return ProgressReading(step=int(step[1]), loss=read_number(step[2]), source=Reader.EXAMPLES_TRAIN)
    if re.search(r"\b(?:no checkpoint in|resuming from) ", text) is None:
        return _first(text, _EXAMPLE_MARKS[:1])
    return _first(text.rstrip(), _EXAMPLE_MARKS[1:])


# --- Hugging Face Trainer: src/transformers/trainer_callback.py (ProgressCallback.on_log writes str(logs), each
# float as f"{v:.4g}" since 5.x, as the float itself before; PrinterCallback.on_log prints the same), src/
# transformers/trainer.py (Trainer.log adds "step" to log_history only, not to the printed dict; _save_checkpoint:
# "Saving model checkpoint to ..." at INFO, which the default verbosity, WARNING, does not print),
# huggingface/transformers 5.25.0. The printed dict has a loss and no step. ---
_HF_LOSS = _pattern(r"\{'loss': '?({NUMBER})'?[,}]")
_HF_STEP = _pattern(r"[{ ]'step': '?({STEP})'?[,}]")
_HF_MARKS = (
    (re.compile(r"\bSaving model checkpoint to "), _phase(Reader.HUGGING_FACE, Phase.BEGIN, CHECKPOINT)),
    (re.compile(r"\*\*\*\*\* Running training \*\*\*\*\*"), ProgressReading(start=True, source=Reader.HUGGING_FACE)),
)


def _hugging_face(text: str) -> ProgressReading | None:
    if loss := _HF_LOSS.search(text):
        step = _HF_STEP.search(text, loss.end())
        return ProgressReading(
            step=int(step[1]) if step else None, loss=read_number(loss[1]), source=Reader.HUGGING_FACE
        )
    return _first(text, _HF_MARKS)


# --- PyTorch Lightning: src/lightning/pytorch/callbacks/model_checkpoint.py (_update_best_and_save with verbose=True:
# "Epoch E, global step S: 'metric' reached X (best Y), saving model to 'P' as top K"), and TQDMProgressBar's bar
# ("Epoch E:  P%|bar| N/T [elapsed<left, rate, postfix]": N counts the batches of epoch E, T shrinks in the epoch
# that max_steps ends, so no step can be read from it; a log that is no terminal gets the bar's states joined by "\r"
# on one line, delivered when a newline comes, at a validation or the epoch's end), Lightning-AI/pytorch-lightning at
# 7f0c3436cd3f6ad3753125672024fc415cbcb414. The default bar is RichProgressBar when `rich` is installed: to a log
# that is no terminal it prints its final state only, when training ends. ---
_LIGHTNING_CHECKPOINT = re.compile(r"\bEpoch [0-9]{1,9}, global step ([0-9]{1,15}): '[^']{1,256}' (reached|was not in)")
_LIGHTNING_BAR = re.compile(
    r"^Epoch [0-9]{1,9}:\s{0,4}[0-9]{1,3}%\|[^|]{0,256}\|\s{0,8}[0-9]{1,15}/(?:[0-9]{1,15}|\?) \["
)
_LIGHTNING_LOSS = _pattern(r"[ ,](?:train_)?loss=({NUMBER})")


def _lightning(text: str) -> ProgressReading | None:
    if found := _LIGHTNING_CHECKPOINT.search(text):
        saving = found[2] == "reached" and "saving model to " in text
        phase = (Phase.BEGIN, CHECKPOINT) if saving else (None, None)
        return ProgressReading(step=int(found[1]), phase=phase[0], phase_name=phase[1], source=Reader.LIGHTNING)
    if bar := _LIGHTNING_BAR.search(text):  # its N counts batches within the epoch: no step (docs/progress.md)
        return ProgressReading(loss=_loss(_LIGHTNING_LOSS, text[bar.end() :]), source=Reader.LIGHTNING)
    return None


# In order: NeMo's step line would also match Megatron's; the rest cannot match one another's lines.
FRAMEWORK_READERS: tuple[Callable[[str], ProgressReading | None], ...] = (
    _nemo,
    _megatron,
    _torchtitan,
    _deepspeed,
    _examples_train,
    _hugging_face,
    _lightning,
)


def read_framework_line(text: str) -> ProgressReading | None:
    """The first framework reading of `text` (visible text: progress_reading.visible_text), or None."""
    for read in FRAMEWORK_READERS:
        if (reading := read(text)) is not None:
            return reading
    return None
