"""A reference PyTorch training script that resumes: what trainguard's relaunches need of your code.

trainguard relaunches a failed job with the same CheckpointConfig. SageMaker copies the checkpoints
under CheckpointConfig.S3Uri into the container's checkpoint directory before the script starts, and
uploads what the script writes there while it runs (and deletes in S3 what it deletes there):
https://docs.aws.amazon.com/sagemaker/latest/dg/model-checkpoints.html
The directory is CheckpointConfig.LocalPath, `/opt/ml/checkpoints` by default:
https://docs.aws.amazon.com/sagemaker/latest/dg/API_CheckpointConfig.html

A relaunch is worth something only if the script:
1. checkpoints every N steps or M minutes, atomically: to a temporary file in the same directory,
   flushed to disk, then renamed, so a kill in the middle of a write never leaves a half-written
   file that looks like the newest checkpoint;
2. resumes at start from the newest complete checkpoint: model, optimizer, scheduler, step and every
   rank's random-number generators, so the run goes on as if it had never stopped;
3. puts a timeout on collectives, so a dead or hung peer fails the job instead of hanging it until
   MaxRuntimeInSeconds (NCCL's "collective operation timeout" and gloo's "Timed out waiting ...ms"
   are failures trainguard relaunches);
4. logs a progress line regularly, so that silence in the logs means a stall, and prints trainguard's
   progress contract (docs/progress.md): a start marker, a step line with its loss, and each checkpoint
   write announced before it starts, with the seconds it should take, and closed after it. A job that
   says how it progresses is stopped within minutes of a hang, and never in the middle of a save it
   announced. The lines are written here with `log.info` so that this script needs nothing but torch;
   in your own loop, `trainguard_sdk.progress` prints them.

The model and the data are tiny and synthetic: replace `build_model` and `load_dataset` with yours.

    python train.py --steps 200 --checkpoint-dir /tmp/ckpt             # one process
    torchrun --nproc-per-node 2 train.py --checkpoint-dir /tmp/ckpt    # gloo on CPU, nccl on GPUs

On SageMaker, pass the options as hyperparameters; the PyTorch estimator's
`distribution={"torch_distributed": {"enabled": True}}` starts the script under torchrun:
https://docs.aws.amazon.com/sagemaker/latest/dg/data-parallel-framework-estimator.html
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import math
import os
import random
import re
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

log = logging.getLogger("train")

CHECKPOINT_NAME = re.compile(r"^step-(\d{9})\.pt$")  # complete checkpoints only; temp files start with "."
# A checkpoint write is announced as taking twice the longest write this run has made so far: room for a slower
# disk or upload, and still far below trainguard's default allowance for a phase with no expectation (60 min).
CHECKPOINT_EXPECT_FACTOR = 2.0


# --- Where we run: torchrun's environment, else SageMaker's host list, else one local process. ---


@dataclass(frozen=True)
class Cluster:
    rank: int
    world_size: int
    local_rank: int
    master_addr: str
    master_port: str


def read_cluster(env: Mapping[str, str]) -> Cluster:
    """torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT. Without it, SageMaker's
    SM_HOSTS (a JSON list) and SM_CURRENT_HOST give one process per host, the first host the master:
    https://github.com/aws/sagemaker-training-toolkit/blob/master/ENVIRONMENT_VARIABLES.md"""
    port = env.get("MASTER_PORT", "29500")
    if "RANK" in env and "WORLD_SIZE" in env:
        rank, world_size = int(env["RANK"]), int(env["WORLD_SIZE"])
        return Cluster(rank, world_size, int(env.get("LOCAL_RANK", "0")), env.get("MASTER_ADDR", "127.0.0.1"), port)
    hosts: list[str] = json.loads(env.get("SM_HOSTS", "[]"))
    if len(hosts) > 1:
        return Cluster(hosts.index(env["SM_CURRENT_HOST"]), len(hosts), 0, hosts[0], port)
    return Cluster(0, 1, 0, "127.0.0.1", port)


def start_process_group(cluster: Cluster, backend: str, timeout_seconds: float) -> None:
    # With NCCL, a watchdog thread aborts the communicator and ends the process when a collective
    # fails or passes the timeout, instead of leaving the GPU waiting. TORCH_NCCL_ASYNC_ERROR_HANDLING is
    # the current name (NCCL_ASYNC_ERROR_HANDLING is its deprecated alias; 1 = abort and tear down):
    # https://pytorch.org/docs/stable/torch_nccl_environment_variables.html
    # With gloo (CPU), a collective raises once `timeout` has passed, and at once if a peer's socket closes.
    os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")
    os.environ.setdefault("MASTER_ADDR", cluster.master_addr)
    os.environ.setdefault("MASTER_PORT", cluster.master_port)
    timeout = datetime.timedelta(seconds=timeout_seconds)
    if cluster.world_size == 1:  # a local run: a throwaway file store, no TCP port to pick
        store = f"file://{tempfile.mkdtemp()}/store"
        dist.init_process_group(backend, init_method=store, rank=0, world_size=1, timeout=timeout)
    else:
        dist.init_process_group(
            backend, init_method="env://", rank=cluster.rank, world_size=cluster.world_size, timeout=timeout
        )


# --- Checkpoints: written atomically by rank 0, read back from the newest complete one. ---


def checkpoint_path(directory: Path, step: int) -> Path:
    return directory / f"step-{step:09d}.pt"


def complete_checkpoints(directory: Path) -> list[tuple[int, Path]]:
    """(step, path) of every complete checkpoint, oldest first. Temporary files never match the name."""
    if not directory.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in directory.iterdir() if (m := CHECKPOINT_NAME.match(p.name))]
    return sorted(found)


def newest_checkpoint(directory: Path) -> Path | None:
    checkpoints = complete_checkpoints(directory)
    return checkpoints[-1][1] if checkpoints else None


def save_atomically(state: dict[str, Any], directory: Path, step: int, keep: int) -> Path:
    """Write to a temporary file in the same directory, fsync it, rename it over the final name (atomic
    on one filesystem), fsync the directory; then delete all but the newest `keep` checkpoints."""
    directory.mkdir(parents=True, exist_ok=True)
    final = checkpoint_path(directory, step)
    fd, temp_name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as temp_file:
            torch.save(state, temp_file)
            temp_file.flush()
            os.fsync(temp_file.fileno())
        os.replace(temp_name, final)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
    directory_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(directory_fd)  # the rename itself survives a crash of the host
    finally:
        os.close(directory_fd)
    for _, old in complete_checkpoints(directory)[:-keep]:
        old.unlink()
    return final


def expected_checkpoint_seconds(previous_seconds: list[float], first_write_seconds: float) -> int:
    """How long the next checkpoint write should take, in whole seconds: CHECKPOINT_EXPECT_FACTOR x the longest
    write of this run so far, at least 1; `first_write_seconds` before the first (nothing measured yet)."""
    if not previous_seconds:
        return max(1, math.ceil(first_write_seconds))
    return max(1, math.ceil(CHECKPOINT_EXPECT_FACTOR * max(previous_seconds)))


@contextmanager
def announced_checkpoint(is_rank_0: bool, previous_seconds: list[float], first_write_seconds: float) -> Iterator[None]:
    """trainguard's progress contract around a checkpoint write (docs/progress.md): rank 0 announces it before
    it starts, with the seconds it should take, and closes it after; the write's duration is added to
    `previous_seconds` for the next announcement. Only rank 0 prints, as for the step lines."""
    if is_rank_0:
        expect = expected_checkpoint_seconds(previous_seconds, first_write_seconds)
        log.info("trainguard:phase begin=checkpoint expect=%d", expect)
    started = time.monotonic()
    yield
    previous_seconds.append(time.monotonic() - started)
    if is_rank_0:
        log.info("trainguard:phase end=checkpoint")


def remove_partial_files(directory: Path) -> None:
    """Temporary files left by a process killed mid-write; they are never read, only wasted space."""
    for leftover in directory.glob(".step-*.tmp"):
        leftover.unlink(missing_ok=True)


def rng_states(data_generator: torch.Generator) -> dict[str, Any]:
    states = {"python": random.getstate(), "torch": torch.get_rng_state(), "data": data_generator.get_state()}
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def restore_rng_states(states: dict[str, Any], data_generator: torch.Generator) -> None:
    random.setstate(states["python"])
    torch.set_rng_state(states["torch"])
    data_generator.set_state(states["data"])
    if "cuda" in states:
        torch.cuda.set_rng_state_all(states["cuda"])


# --- The model and the data: replace these with yours. ---


def build_model() -> nn.Module:
    return nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 1))


def load_dataset(data_dir: Path | None, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """`train.pt` ({"x": ..., "y": ...}) from the training channel if there is one, else synthetic data."""
    if data_dir is not None and (data_dir / "train.pt").is_file():
        data = torch.load(data_dir / "train.pt", weights_only=True)
        return data["x"], data["y"]
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(4096, 16, generator=generator)
    true_weights = torch.randn(16, 1, generator=generator)
    y = torch.sin(x @ true_weights / 4) + 0.1 * torch.randn(4096, 1, generator=generator)
    return x, y


# --- Training. ---


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    env = os.environ
    parser = argparse.ArgumentParser(description="A reference training script that resumes.")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint-dir", type=Path, default=Path(env.get("CHECKPOINT_DIR", "/opt/ml/checkpoints")))
    parser.add_argument("--checkpoint-every-steps", type=int, default=100)
    parser.add_argument("--checkpoint-every-minutes", type=float, default=15.0)
    parser.add_argument("--keep-checkpoints", type=int, default=2)
    # The first write has no measured duration: announce it as this (a 70B model's save takes about 10 min).
    parser.add_argument("--first-checkpoint-expect-seconds", type=float, default=600.0)
    parser.add_argument("--log-every-steps", type=int, default=10)
    parser.add_argument("--log-every-seconds", type=float, default=60.0, help="a line at least this often")
    # Well below trainguard's stall-minutes (30 by default), above your slowest checkpoint write.
    parser.add_argument("--collective-timeout-seconds", type=float, default=600.0)
    parser.add_argument("--backend", default="nccl" if torch.cuda.is_available() else "gloo")
    channel = env.get("SM_CHANNEL_TRAINING")
    parser.add_argument("--data-dir", type=Path, default=Path(channel) if channel else None)
    parser.add_argument("--model-dir", type=Path, default=Path(env.get("SM_MODEL_DIR", "model")))
    return parser.parse_args(argv)


def train(args: argparse.Namespace, cluster: Cluster) -> None:
    device = torch.device(f"cuda:{cluster.local_rank}" if args.backend == "nccl" else "cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    torch.manual_seed(args.seed)  # the same initial weights on every rank
    model = build_model().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=max(1, args.steps // 3), gamma=0.5)
    x, y = load_dataset(args.data_dir, args.seed)
    random.seed(args.seed + cluster.rank)
    torch.manual_seed(args.seed + cluster.rank)  # a different dropout mask on every rank
    data_generator = torch.Generator().manual_seed(args.seed * 1000 + cluster.rank)

    # Rank 0 reads the newest complete checkpoint and sends it to every rank: on SageMaker, only the
    # first host is sure to have the files rank 0 wrote.
    checkpoint: list[Any] = [None]
    if cluster.rank == 0:
        remove_partial_files(args.checkpoint_dir)
        newest = newest_checkpoint(args.checkpoint_dir)
        if newest is not None:
            checkpoint[0] = torch.load(newest, map_location="cpu", weights_only=True)
            log.info("resuming from %s (step %d)", newest, checkpoint[0]["step"])
        else:
            log.info("no checkpoint in %s: starting from step 0", args.checkpoint_dir)
    dist.broadcast_object_list(checkpoint, src=0)
    start_step = 0
    if checkpoint[0] is not None:
        state = checkpoint[0]
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        start_step = state["step"]
        if len(state["rng"]) == cluster.world_size:
            restore_rng_states(state["rng"][cluster.rank], data_generator)
        else:  # another number of processes: the run goes on, but not bit for bit
            log.warning("checkpoint has %d ranks' random states, not %d", len(state["rng"]), cluster.world_size)
    ddp_model = DistributedDataParallel(model)  # all-reduces the gradients, under the same timeout
    if cluster.rank == 0:
        log.info("trainguard:start")  # the contract's start marker: the first step follows

    checkpoint_seconds: list[float] = []  # this run's checkpoint writes, for the next one's announcement
    started = last_checkpoint_time = last_log_time = time.monotonic()
    for step in range(start_step + 1, args.steps + 1):
        batch = torch.randint(0, len(x), (args.batch_size,), generator=data_generator)
        inputs, targets = x[batch].to(device), y[batch].to(device)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(ddp_model(inputs), targets)
        loss.backward()
        optimizer.step()
        scheduler.step()

        # One all-reduce for two things: the mean loss to log, and whether any rank's clock says a
        # checkpoint is due (every rank must agree, or rank 0 would wait alone at the barrier).
        now = time.monotonic()
        time_due = now - last_checkpoint_time >= args.checkpoint_every_minutes * 60
        shared = torch.tensor([loss.item(), float(time_due)], dtype=torch.float32, device=device)
        dist.all_reduce(shared)
        mean_loss, checkpoint_due = (shared[0] / cluster.world_size).item(), shared[1].item() > 0

        log_due = step % args.log_every_steps == 0 or now - last_log_time >= args.log_every_seconds
        if cluster.rank == 0 and (log_due or step in (start_step + 1, args.steps)):
            # the loss with 9 significant digits: enough to tell any two float32 values apart
            log.info("step=%d/%d loss=%.9g elapsed=%.1fs", step, args.steps, mean_loss, now - started)
            log.info("trainguard:progress step=%d loss=%.9g", step, mean_loss)  # "nan" and "inf" read as such
            last_log_time = now
        if checkpoint_due or step % args.checkpoint_every_steps == 0 or step == args.steps:
            with announced_checkpoint(cluster.rank == 0, checkpoint_seconds, args.first_checkpoint_expect_seconds):
                write_checkpoint(args, cluster, step, model, optimizer, scheduler, data_generator)
            last_checkpoint_time = time.monotonic()

    if cluster.rank == 0:
        args.model_dir.mkdir(parents=True, exist_ok=True)
        torch.save(model.state_dict(), args.model_dir / "model.pt")  # SageMaker uploads SM_MODEL_DIR at the end
        log.info("training complete: %d steps, model in %s", args.steps, args.model_dir)


def write_checkpoint(
    args: argparse.Namespace,
    cluster: Cluster,
    step: int,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    data_generator: torch.Generator,
) -> None:
    """Every rank sends its random states to rank 0 (this also lines the ranks up), rank 0 writes, and
    the barrier after it holds every rank until the checkpoint is on disk."""
    all_rng: list[Any] = [None] * cluster.world_size
    dist.all_gather_object(all_rng, rng_states(data_generator))
    if cluster.rank == 0:
        write_started = time.monotonic()
        state = {
            "step": step,
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "rng": all_rng,
        }
        path = save_atomically(state, args.checkpoint_dir, step, keep=args.keep_checkpoints)
        log.info("checkpoint step=%d written to %s in %.2fs", step, path, time.monotonic() - write_started)
    dist.barrier()


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    cluster = read_cluster(os.environ)
    logging.basicConfig(
        stream=sys.stdout, level=logging.INFO, format=f"%(asctime)s rank{cluster.rank} %(levelname)s %(message)s"
    )
    start_process_group(cluster, args.backend, args.collective_timeout_seconds)
    try:
        train(args, cluster)
    finally:
        dist.destroy_process_group()


def exit_without_teardown() -> None:
    """End a successful run here, without Python's teardown. A worker thread of the process group (seen
    with gloo) can still be releasing the last collective's tensors when Python shuts down; it then needs
    the interpreter, which is going away, and the process aborts (SIGABRT, exit code 134) after a good
    run (a few runs in a hundred on our CPU test). Everything is written by now:
    https://github.com/pytorch/pytorch/issues/190489"""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
    exit_without_teardown()
