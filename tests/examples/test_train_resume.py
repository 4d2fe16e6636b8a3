"""examples/train.py on the CPU with gloo, two processes: killed mid-run and started again, it resumes at
its newest complete checkpoint and every loss after the restart is the loss of a run that was never
interrupted. A hung or dead peer makes rank 0 fail within the collective timeout instead of hanging."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from examples.train import CHECKPOINT_NAME, complete_checkpoints, newest_checkpoint
from tests.examples.ranks import PROGRESS, RESUMED, TRAIN_SCRIPT, Ranks, start_ranks, training_env

pytestmark = pytest.mark.slow

STEPS = 600
CHECKPOINT_EVERY = 50
KILL_AFTER_STEP = 120  # SIGKILL both ranks once rank 0 has logged a step past this one
RUN_TIMEOUT = 120.0


def _train_args(run_dir: Path, checkpoint_dir: Path, *extra: str) -> list[str]:
    return [
        "--steps", str(STEPS), "--seed", "7",
        "--checkpoint-dir", str(checkpoint_dir), "--checkpoint-every-steps", str(CHECKPOINT_EVERY),
        "--model-dir", str(run_dir / "model"), "--log-every-steps", "1",
        *extra,
    ]  # fmt: skip


def _past(step: int) -> Callable[[str], bool]:
    """True once rank 0's log has a progress line for a step after `step`."""
    return lambda log: any(int(logged) > step for logged, _ in PROGRESS.findall(log))


def _run_to_the_end(ranks: Ranks) -> dict[int, str]:
    try:
        codes = ranks.wait(timeout=RUN_TIMEOUT)
    finally:
        ranks.kill_all()
    assert codes == [0, 0], f"exit codes {codes}\n{ranks.log(0)[-1500:]}\n{ranks.log(1)[-1500:]}"
    return ranks.losses()


def test_a_killed_run_resumes_at_its_newest_checkpoint_and_repeats_the_uninterrupted_losses(tmp_path: Path) -> None:
    reference = _run_to_the_end(start_ranks(tmp_path, "reference", *_train_args(tmp_path / "ref", tmp_path / "ref")))
    assert sorted(reference) == list(range(1, STEPS + 1))

    checkpoints = tmp_path / "checkpoints"
    killed = start_ranks(tmp_path, "killed", *_train_args(tmp_path / "run", checkpoints))
    try:
        killed.wait_for(_past(KILL_AFTER_STEP), timeout=RUN_TIMEOUT)
        for rank in (0, 1):
            killed.signal(rank, signal.SIGKILL)
        assert killed.wait(timeout=30) == [-signal.SIGKILL, -signal.SIGKILL]
    finally:
        killed.kill_all()
    before_kill = killed.losses()
    kill_step = max(before_kill)
    assert kill_step < STEPS, "the run ended before the kill: nothing was interrupted"
    assert before_kill == {step: reference[step] for step in before_kill}

    newest = newest_checkpoint(checkpoints)
    assert newest is not None
    name = CHECKPOINT_NAME.match(newest.name)
    assert name is not None
    checkpoint_step = int(name.group(1))
    steps_lost = kill_step - checkpoint_step
    assert checkpoint_step % CHECKPOINT_EVERY == 0
    assert 0 <= steps_lost <= CHECKPOINT_EVERY
    # What a kill in the middle of a write leaves, named as if it were newer: it must never be read.
    partial = checkpoints / f".step-{STEPS:09d}.pt.x1y2z3.tmp"
    partial.write_bytes(b"half a checkpoint")

    started = time.monotonic()
    resumed = start_ranks(tmp_path, "resumed", *_train_args(tmp_path / "run", checkpoints))
    after_resume = _run_to_the_end(resumed)
    resume_seconds = time.monotonic() - started
    assert RESUMED.findall(resumed.log(0)) == [str(checkpoint_step)]
    assert sorted(after_resume) == list(range(checkpoint_step + 1, STEPS + 1))
    different = {step: (loss, reference[step]) for step, loss in after_resume.items() if loss != reference[step]}
    assert not different, f"losses that differ from the uninterrupted run (step: resumed, reference): {different}"
    assert not partial.exists()

    final = torch.load(tmp_path / "run" / "model" / "model.pt", weights_only=True)
    expected = torch.load(tmp_path / "ref" / "model" / "model.pt", weights_only=True)
    assert final.keys() == expected.keys()
    assert all(torch.equal(final[key], expected[key]) for key in expected)
    print(
        f"\nkilled after step {kill_step}; newest complete checkpoint: step {checkpoint_step}; "
        f"steps lost: {steps_lost}; resumed at step {checkpoint_step + 1}; {len(after_resume)} losses after "
        f"the resume equal the uninterrupted run's bit for bit; the restart took {resume_seconds:.1f}s"
    )


TIMEOUT_SECONDS = 5
MARGIN_SECONDS = 15  # two shared cores: a process can wait its turn for a while


@pytest.mark.parametrize(
    ("fault", "signum", "error"),
    [
        ("hung", signal.SIGSTOP, f"Timed out waiting {TIMEOUT_SECONDS * 1000}ms"),  # the socket stays open
        ("dead", signal.SIGKILL, "Connection (closed|reset) by peer"),  # the kernel closes its socket
    ],
)
def test_a_hung_or_dead_peer_makes_rank_0_fail_instead_of_hanging(
    tmp_path: Path, fault: str, signum: int, error: str
) -> None:
    args = ["--steps", "100000000", "--checkpoint-dir", str(tmp_path / "ckpt"), "--model-dir", str(tmp_path / "m")]
    ranks = start_ranks(tmp_path, fault, *args, "--collective-timeout-seconds", str(TIMEOUT_SECONDS))
    try:
        ranks.wait_for(_past(20), timeout=RUN_TIMEOUT)
        ranks.signal(1, signum)
        faulted = time.monotonic()
        code = ranks.processes[0].wait(timeout=TIMEOUT_SECONDS + MARGIN_SECONDS)  # TimeoutExpired: it hung
        seconds = time.monotonic() - faulted
    finally:
        ranks.kill_all()
    assert code != 0
    assert re.search(error, ranks.log(0)), ranks.log(0)[-2000:]
    print(f"\n{fault} peer: rank 0 exited with {code} after {seconds:.1f}s (timeout {TIMEOUT_SECONDS}s)")


def test_one_process_without_torchrun_checkpoints_on_the_clock_where_the_environment_says(tmp_path: Path) -> None:
    # No RANK or SM_HOSTS: a single process on a file store. CHECKPOINT_DIR and SM_MODEL_DIR stand in for
    # the options; --checkpoint-every-minutes 0 makes the clock call for a checkpoint after every step.
    checkpoints, model_dir = tmp_path / "checkpoints", tmp_path / "model"
    env = training_env(CHECKPOINT_DIR=str(checkpoints), SM_MODEL_DIR=str(model_dir))
    args = ["--steps", "5", "--checkpoint-every-steps", "1000", "--checkpoint-every-minutes", "0"]
    args += ["--keep-checkpoints", "9"]
    done = subprocess.run(
        [sys.executable, str(TRAIN_SCRIPT), *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert [step for step, _ in complete_checkpoints(checkpoints)] == [1, 2, 3, 4, 5]
    assert (model_dir / "model.pt").is_file()
    assert "rank0 INFO step=5/5 loss=" in done.stdout
