"""examples/train.py's checkpoint files and cluster reading, without starting any process: atomic writes,
the newest complete checkpoint, partial files that are never read, torchrun's and SageMaker's environment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from examples.train import (
    Cluster,
    checkpoint_path,
    complete_checkpoints,
    load_dataset,
    newest_checkpoint,
    read_cluster,
    remove_partial_files,
    save_atomically,
)


def _state(step: int) -> dict[str, object]:
    return {"step": step, "weights": torch.full((3,), float(step))}


def test_a_saved_checkpoint_is_the_newest_and_reads_back(tmp_path: Path) -> None:
    for step in (10, 20):
        save_atomically(_state(step), tmp_path, step, keep=5)
    newest = newest_checkpoint(tmp_path)
    assert newest == checkpoint_path(tmp_path, 20) == tmp_path / "step-000000020.pt"
    loaded = torch.load(newest, weights_only=True)
    assert loaded["step"] == 20
    assert torch.equal(loaded["weights"], torch.full((3,), 20.0))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step-000000010.pt", "step-000000020.pt"]


def test_steps_are_compared_as_numbers_not_as_text(tmp_path: Path) -> None:
    for step in (9, 100, 20):
        save_atomically(_state(step), tmp_path, step, keep=5)
    assert [step for step, _ in complete_checkpoints(tmp_path)] == [9, 20, 100]


def test_a_partial_file_left_by_a_kill_is_never_the_newest_and_is_removed(tmp_path: Path) -> None:
    save_atomically(_state(30), tmp_path, 30, keep=5)
    # What a kill in the middle of a write leaves: the temporary file, named after a later step.
    partial = tmp_path / ".step-000000040.pt.k2j3h4.tmp"
    partial.write_bytes(b"\x80\x02half a pickle")
    (tmp_path / "step-000000050.pt.part").write_bytes(b"a file from some other tool")
    assert newest_checkpoint(tmp_path) == checkpoint_path(tmp_path, 30)
    remove_partial_files(tmp_path)
    assert not partial.exists()
    assert (tmp_path / "step-000000050.pt.part").exists()  # not ours: left alone, and never read


def test_a_write_that_fails_leaves_no_file_and_the_previous_checkpoint_stays_the_newest(tmp_path: Path) -> None:
    save_atomically(_state(10), tmp_path, 10, keep=5)
    with pytest.raises(Exception, match="pickle"):
        save_atomically({"step": 20, "not picklable": lambda: None}, tmp_path, 20, keep=5)
    assert [p.name for p in tmp_path.iterdir()] == ["step-000000010.pt"]
    assert newest_checkpoint(tmp_path) == checkpoint_path(tmp_path, 10)


def test_only_the_newest_checkpoints_are_kept(tmp_path: Path) -> None:
    for step in (1, 2, 3, 4):
        save_atomically(_state(step), tmp_path, step, keep=2)
    assert [step for step, _ in complete_checkpoints(tmp_path)] == [3, 4]


def test_no_directory_or_an_empty_one_means_start_from_step_0(tmp_path: Path) -> None:
    assert newest_checkpoint(tmp_path / "absent") is None
    assert newest_checkpoint(tmp_path) is None


def test_torchrun_environment_comes_first() -> None:
    env = {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "MASTER_ADDR": "10.0.0.5", "MASTER_PORT": "7777"}
    env |= {"SM_HOSTS": json.dumps(["algo-1", "algo-2"]), "SM_CURRENT_HOST": "algo-2"}
    assert read_cluster(env) == Cluster(rank=3, world_size=4, local_rank=1, master_addr="10.0.0.5", master_port="7777")


def test_sagemaker_hosts_give_one_process_per_host_with_the_first_host_as_master() -> None:
    # SM_HOSTS and SM_CURRENT_HOST as the SageMaker training toolkit sets them:
    # https://github.com/aws/sagemaker-training-toolkit/blob/master/ENVIRONMENT_VARIABLES.md
    env = {"SM_HOSTS": '["algo-1","algo-2","algo-3"]', "SM_CURRENT_HOST": "algo-3"}
    assert read_cluster(env) == Cluster(rank=2, world_size=3, local_rank=0, master_addr="algo-1", master_port="29500")


def test_one_host_or_no_environment_is_a_single_process() -> None:
    single = Cluster(rank=0, world_size=1, local_rank=0, master_addr="127.0.0.1", master_port="29500")
    assert read_cluster({}) == single
    assert read_cluster({"SM_HOSTS": '["algo-1"]', "SM_CURRENT_HOST": "algo-1"}) == single


def test_the_dataset_is_the_same_for_the_same_seed_and_comes_from_the_channel_when_there_is_one(
    tmp_path: Path,
) -> None:
    x, y = load_dataset(None, seed=1)
    x_again, y_again = load_dataset(tmp_path, seed=1)  # a channel without train.pt: synthetic
    assert torch.equal(x, x_again) and torch.equal(y, y_again)
    assert not torch.equal(x, load_dataset(None, seed=2)[0])
    torch.save({"x": torch.ones(8, 16), "y": torch.zeros(8, 1)}, tmp_path / "train.pt")
    x_channel, y_channel = load_dataset(tmp_path, seed=1)
    assert x_channel.shape == (8, 16) and torch.equal(y_channel, torch.zeros(8, 1))
