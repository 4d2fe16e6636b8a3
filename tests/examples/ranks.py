"""Start examples/train.py as a group of local processes (gloo on the CPU), the way torchrun would,
and read what rank 0 logs. Each rank writes to its own file, so nothing blocks on a full pipe."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

TRAIN_SCRIPT = Path(__file__).parents[2] / "examples" / "train.py"
PROGRESS = re.compile(r"rank0 INFO step=(\d+)/\d+ loss=(\S+)")
RESUMED = re.compile(r"resuming from \S+ \(step (\d+)\)")
CHECKPOINT_WRITTEN = re.compile(r"checkpoint step=(\d+) written")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Ranks:
    processes: list[subprocess.Popen[bytes]]
    logs: list[Path]

    def log(self, rank: int = 0) -> str:
        return self.logs[rank].read_text(errors="replace")

    def losses(self) -> dict[int, str]:
        """Rank 0's progress lines: step -> the loss as printed (9 significant digits of a float32)."""
        return {int(step): loss for step, loss in PROGRESS.findall(self.log(0))}

    def wait_for(self, condition: Callable[[str], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not condition(self.log(0)):
            if time.monotonic() > deadline or self.processes[0].poll() is not None:
                raise AssertionError(f"rank 0 never got there; its log ends with:\n{self.log(0)[-2000:]}")
            time.sleep(0.01)

    def signal(self, rank: int, signum: int) -> None:
        os.kill(self.processes[rank].pid, signum)

    def wait(self, timeout: float) -> list[int]:
        return [process.wait(timeout=timeout) for process in self.processes]

    def kill_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                process.wait()


def training_env(**extra: str) -> dict[str, str]:
    """This process's environment without any torchrun or SageMaker variable, plus `extra`."""
    inherited = ("SM_", "RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_", "CHECKPOINT_DIR")
    env = {k: v for k, v in os.environ.items() if not k.startswith(inherited)}
    env.update(
        OMP_NUM_THREADS="1",  # two cores, shared: one thread per rank
        PYTHONWARNINGS="ignore",  # torch warns when numpy is missing; the script does not use it
        PYTHONFAULTHANDLER="1",  # a crash or an abort prints every thread's Python stack into the log
    )
    return env | extra


def start_ranks(workdir: Path, name: str, *train_args: str, world_size: int = 2) -> Ranks:
    """One process per rank with torchrun's environment (RANK, WORLD_SIZE, MASTER_ADDR on 127.0.0.1)."""
    env = training_env(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), WORLD_SIZE=str(world_size))
    processes, logs = [], []
    for rank in range(world_size):
        log = workdir / f"{name}-rank{rank}.log"
        with log.open("wb") as out:
            command = [sys.executable, str(TRAIN_SCRIPT), *train_args]
            rank_env = {**env, "RANK": str(rank), "LOCAL_RANK": str(rank)}
            processes.append(subprocess.Popen(command, env=rank_env, stdout=out, stderr=subprocess.STDOUT))
        logs.append(log)
    return Ranks(processes, logs)
