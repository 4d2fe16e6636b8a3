"""trainguard_sdk.huggingface.TrainguardCallback inside a real `transformers.Trainer`: a two-layer model on the CPU,
12 steps, a log every 4, a save every 5, an evaluation every 6; what the run prints is read by the product's reader.
The model prints a marker where the Trainer really evaluates (its forward outside training) and saves (its
state_dict), so the test sees that each announced phase holds the work it announces."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from transformers import Trainer, TrainingArguments

from tests.frameworks.product_reading import assert_read_as_progress, contract_lines, read_run, shape
from trainguard_sdk.huggingface import TrainguardCallback

pytestmark = pytest.mark.frameworks

SAVING, EVALUATING = "test-marker: saving", "test-marker: evaluating"


class TwoLayers(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> dict[str, torch.Tensor]:
        if not self.training:
            print(EVALUATING)
        out = self.net(x).squeeze(-1)
        return {"loss": nn.functional.mse_loss(out, labels), "logits": out}

    def state_dict(self, *args: Any, **kwargs: Any) -> Any:
        print(SAVING)
        return super().state_dict(*args, **kwargs)


def train(tmp_path: Path, **arguments: Any) -> None:
    torch.manual_seed(0)
    xs = torch.randn(64, 4)
    data = [{"x": x, "labels": x.sum()} for x in xs]
    settings: dict[str, Any] = {"logging_steps": 4, "save_steps": 5, "eval_strategy": "steps", "eval_steps": 6}
    settings.update(arguments)
    args = TrainingArguments(
        output_dir=str(tmp_path),
        max_steps=12,
        per_device_train_batch_size=8,
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
        **settings,
    )
    callback = TrainguardCallback(every_seconds=0, first_checkpoint_expect_seconds=600)
    Trainer(model=TwoLayers(), args=args, train_dataset=data, eval_dataset=data[:16], callbacks=[callback]).train()


def test_the_trainers_steps_saves_and_evaluations_read_as_the_contract(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train(tmp_path)
    read = read_run(capsys.readouterr().out)
    assert [shape(line) for line in contract_lines(read)] == [
        "start",
        *("step 1", "step 2", "step 3", "step 4 loss", "step 5"),
        *("begin checkpoint", "end checkpoint", "step 6", "begin evaluation", "end evaluation"),
        *("step 7", "step 8 loss", "step 9", "step 10", "begin checkpoint", "end checkpoint", "step 11"),
        # the last step: logged, then evaluated and saved, as the Trainer ends a step-based run
        *("step 12 loss", "begin evaluation", "end evaluation", "begin checkpoint", "end checkpoint"),
    ]
    assert sorted(p.name for p in tmp_path.glob("checkpoint-*")) == ["checkpoint-10", "checkpoint-12", "checkpoint-5"]
    expectations = [line.reading.expect_seconds for line in read if shape(line) == "begin checkpoint"]
    assert expectations[0] == 600  # nothing measured yet: the first save's expectation
    assert all(e is not None and 1 <= e < 600 for e in expectations[1:]), expectations  # learned: 2 x a small save
    assert_read_as_progress(read, last_step=12, test_markers={SAVING: "checkpoint", EVALUATING: "evaluation"})


def test_epoch_strategies_announce_the_epochs_evaluation_and_save(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train(tmp_path, eval_strategy="epoch", save_strategy="epoch", logging_strategy="epoch")  # 8 steps an epoch
    read = read_run(capsys.readouterr().out)
    # An epoch's log comes after its last step was printed (on_step_end): its loss is not printed again.
    assert [shape(line) for line in contract_lines(read)] == [
        *("start", "step 1", "step 2", "step 3", "step 4", "step 5", "step 6", "step 7"),
        *("step 8", "begin evaluation", "end evaluation", "begin checkpoint", "end checkpoint"),
        *("step 9", "step 10", "step 11"),
        *("step 12", "begin evaluation", "end evaluation", "begin checkpoint", "end checkpoint"),
    ]
    assert_read_as_progress(read, last_step=12, test_markers={SAVING: "checkpoint", EVALUATING: "evaluation"})
