"""trainguard_sdk.lightning and trainguard_sdk.pytorch_lightning's TrainguardCallback inside a real Lightning
Trainer, of each package: a two-layer model on the CPU, 12 steps, a save every 5 (ModelCheckpoint), a validation
every 6 batches; what the run prints is read by the product's reader. The checkpoint writer (a CheckpointIO plugin)
and validation_step print a marker where Lightning really writes and validates, so the test sees that each announced
phase holds the work it announces."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from tests.frameworks.product_reading import assert_read_as_progress, contract_lines, read_run, shape

pytestmark = pytest.mark.frameworks

WRITING, VALIDATING = "test-marker: writing", "test-marker: validating"
# The package, and trainguard's module for it.
PACKAGES = {"lightning.pytorch": "trainguard_sdk.lightning", "pytorch_lightning": "trainguard_sdk.pytorch_lightning"}


def run(package: str, tmp_path: Path, every_n_train_steps: int | None = None, **trainer_arguments: Any) -> None:
    pl = importlib.import_module(package)
    callbacks = importlib.import_module(f"{package}.callbacks")
    checkpoint_io = importlib.import_module(f"{package}.plugins.io")
    trainguard = importlib.import_module(PACKAGES[package])

    class TwoLayers(pl.LightningModule):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))

        def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
            x, y = batch
            return nn.functional.mse_loss(self.net(x).squeeze(-1), y)

        def validation_step(self, batch: Any, batch_idx: int) -> None:
            if not self.trainer.sanity_checking:  # the sanity check comes before the start marker: no phase
                print(VALIDATING)
            x, y = batch
            self.log("val_loss", nn.functional.mse_loss(self.net(x).squeeze(-1), y))

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.SGD(self.parameters(), lr=0.01)

    class PrintingIO(checkpoint_io.TorchCheckpointIO):  # type: ignore[misc,name-defined]
        def save_checkpoint(self, *args: Any, **kwargs: Any) -> None:
            print(WRITING)
            super().save_checkpoint(*args, **kwargs)

    torch.manual_seed(0)
    xs = torch.randn(64, 4)
    train, validation = TensorDataset(xs, xs.sum(-1)), TensorDataset(xs[:16], xs[:16].sum(-1))
    trainer = pl.Trainer(
        max_steps=12,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=str(tmp_path),
        plugins=[PrintingIO()],
        callbacks=[
            trainguard.TrainguardCallback(every_seconds=0, first_checkpoint_expect_seconds=600),
            callbacks.ModelCheckpoint(
                dirpath=tmp_path / "checkpoints", every_n_train_steps=every_n_train_steps, save_top_k=-1
            ),
        ],
        **trainer_arguments,
    )
    trainer.fit(TwoLayers(), DataLoader(train, batch_size=8), DataLoader(validation, batch_size=8))


@pytest.mark.parametrize("package", PACKAGES)
def test_the_trainers_steps_saves_and_validations_read_as_the_contract(
    package: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(
        package, tmp_path, every_n_train_steps=5, val_check_interval=6
    )  # 8 batches an epoch: a validation at steps 6 and 14 (not reached)
    read = read_run(capsys.readouterr().out)
    assert [shape(line) for line in contract_lines(read)] == [
        *("start", "step 1 loss", "step 2 loss", "step 3 loss", "step 4 loss", "step 5 loss"),
        *("begin checkpoint", "end checkpoint", "step 6 loss", "begin validation", "end validation"),
        *("step 7 loss", "step 8 loss", "step 9 loss", "step 10 loss", "begin checkpoint", "end checkpoint"),
        *("step 11 loss", "step 12 loss"),
    ]
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == [
        "epoch=0-step=5.ckpt",
        "epoch=1-step=10.ckpt",
    ]
    expectations = [line.reading.expect_seconds for line in read if shape(line) == "begin checkpoint"]
    assert expectations[0] == 600 and expectations[1] is not None and 1 <= expectations[1] < 600
    assert_read_as_progress(read, last_step=12, test_markers={WRITING: "checkpoint", VALIDATING: "validation"})


@pytest.mark.parametrize("package", PACKAGES)
def test_a_save_after_validation_and_the_last_save_are_closed(
    package: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(package, tmp_path)  # ModelCheckpoint's default: a save after each epoch's validation
    read = read_run(capsys.readouterr().out)
    shapes = [shape(line) for line in contract_lines(read)]
    assert shapes[shapes.index("step 8 loss") :] == [
        *("step 8 loss", "begin validation", "end validation", "begin checkpoint", "end checkpoint"),
        # max_steps ends the second epoch early: ModelCheckpoint saves at its end, closed by on_train_end
        *("step 9 loss", "step 10 loss", "step 11 loss", "step 12 loss", "begin checkpoint", "end checkpoint"),
    ]
    assert_read_as_progress(read, last_step=12, test_markers={WRITING: "checkpoint", VALIDATING: "validation"})
