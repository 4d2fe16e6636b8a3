"""examples/train.py prints trainguard's progress contract (docs/progress.md), read by the product's own reader
(trainguard.domain.progress_lines): a start marker before the first step, a contract step line beside each of its
own step lines with the same step and loss, and every checkpoint write announced before it starts, with an
expectation learned from the run's previous writes, and closed after it."""

from __future__ import annotations

from pathlib import Path

import pytest

from examples.train import CHECKPOINT_EXPECT_FACTOR, expected_checkpoint_seconds
from tests.examples.ranks import start_ranks
from trainguard.domain.progress_lines import read_progress_line
from trainguard.domain.progress_reading import Phase, ProgressReading, Reader

RUN_TIMEOUT = 120.0
FIRST_EXPECT_SECONDS = 42


@pytest.mark.parametrize(
    ("previous", "first", "expected"),
    [
        ([], 42.0, 42),  # nothing measured yet: the option
        ([], 0.2, 1),  # never below a second
        ([0.01], 600.0, 1),
        ([3.2, 1.0], 600.0, 7),  # the longest write, doubled, rounded up
        ([1.0, 3.2, 2.5], 600.0, 7),
    ],
)
def test_a_write_is_expected_to_take_twice_the_longest_previous_write(
    previous: list[float], first: float, expected: int
) -> None:
    assert CHECKPOINT_EXPECT_FACTOR == 2.0
    assert expected_checkpoint_seconds(previous, first) == expected


def test_a_run_prints_the_contract_around_its_own_lines(tmp_path: Path) -> None:
    args = ["--steps", "30", "--log-every-steps", "10", "--checkpoint-every-steps", "10"]
    args += ["--checkpoint-dir", str(tmp_path / "ckpt"), "--model-dir", str(tmp_path / "model")]
    args += ["--first-checkpoint-expect-seconds", str(FIRST_EXPECT_SECONDS)]
    ranks = start_ranks(tmp_path, "progress", *args)
    try:
        assert ranks.wait(timeout=RUN_TIMEOUT) == [0, 0], ranks.log(0)[-2000:]
    finally:
        ranks.kill_all()
    readings = [read_progress_line(line) for line in ranks.log(0).splitlines()]
    contract = [r for r in readings if r.source is Reader.CONTRACT]
    own = [r for r in readings if r.source is Reader.EXAMPLES_TRAIN]

    assert contract[0] == ProgressReading(start=True, source=Reader.CONTRACT)
    contract_steps = [(r.step, r.loss) for r in contract if r.step is not None]
    assert [step for step, _ in contract_steps] == [1, 10, 20, 30]
    assert contract_steps == [(r.step, r.loss) for r in own if r.step is not None]

    # Each write: the contract's begin, then the script's own "written" line (read as a phase end), then the
    # contract's end; nothing else of the contract in between.
    phases = [(r.source, r.phase, r.expect_seconds) for r in readings if r.phase is not None]
    assert len(phases) == 3 * 3  # checkpoints at steps 10, 20 and 30
    for index in range(0, len(phases), 3):
        begin, written, end = phases[index : index + 3]
        assert begin[:2] == (Reader.CONTRACT, Phase.BEGIN) and begin[2] is not None
        assert written[:2] == (Reader.EXAMPLES_TRAIN, Phase.END)
        assert end == (Reader.CONTRACT, Phase.END, None)
    expects = [expect for _, phase, expect in phases if phase is Phase.BEGIN]
    assert expects[0] == FIRST_EXPECT_SECONDS  # the first write has no measured duration
    assert all(expect < FIRST_EXPECT_SECONDS for expect in expects[1:])  # learned from writes of milliseconds
    assert all(r.phase_name == "checkpoint" for r in contract if r.phase is not None)
    assert not [line for line in ranks.log(1).splitlines() if "trainguard:" in line]  # rank 0 speaks for the job
