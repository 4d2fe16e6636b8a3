"""What every command checks before it starts work: the files it will write, the text it reads, the AWS
session it calls with. Each problem is one line for the user and an exit code from the table below."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

# One convention for every command (docs/operations.md, "Exit status").
EXIT_OK = 0
EXIT_NO = 1  # the command's answer is "no": preflight found a quota that blocks the launch
EXIT_UNUSABLE = 2  # the input cannot be used: a usage error, an unreadable file, a value refused, an AWS error
EXIT_NOT_FOUND = 3  # the job (or lineage) named does not exist, in SageMaker nor in the ledger
STANDARD_INPUT = "-"


class UnusableInput(Exception):
    """An input file or value cannot be used; the message is the one line the user sees (exit 2)."""


class NotFound(Exception):
    """What the command was asked about does not exist; the message names it (exit 3)."""


def output_file(text: str) -> Path:
    """An argparse type for a file the command writes at its end: its folder must exist and be writable now,
    so that a long run never ends in an error about where to write."""
    path = Path(text)
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder; give a file name")
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(f"cannot write {text}: there is no folder {folder}")
    if not os.access(folder, os.W_OK):
        raise argparse.ArgumentTypeError(f"cannot write {text}: the folder {folder} is not writable")
    return path


def read_text(value: str | None, path: Path | None) -> str | None:
    """A text given on the command line or in a file, either of them `-` for standard input; None when none is
    given."""
    if value == STANDARD_INPUT or (path is not None and str(path) == STANDARD_INPUT):
        return sys.stdin.read()
    if path is not None:
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise UnusableInput(f"{path}: no such file") from None
        except (OSError, UnicodeDecodeError) as err:
            raise UnusableInput(f"{path}: cannot be read ({err})") from None
    return value


def read_text_as_written(path: Path) -> str:
    """A UTF-8 file (or standard input, `-`) with its line ends as written: a carriage return is kept, not read as
    a line end (a progress bar writes its states on one line, joined by carriage returns)."""
    try:
        raw = sys.stdin.buffer.read() if str(path) == STANDARD_INPUT else path.read_bytes()
        return raw.decode("utf-8")
    except FileNotFoundError:
        raise UnusableInput(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise UnusableInput(f"{path}: cannot be read ({err})") from None


def aws_session() -> Any:
    """A boto3 session in the region the environment names. boto3 reads AWS_DEFAULT_REGION and the profile's
    region, not AWS_REGION (botocore/configprovider.py: 'region' is ('region', 'AWS_DEFAULT_REGION', ...)),
    while Lambda, the AWS SDKs for other languages and many shells set AWS_REGION: it is read too."""
    import boto3

    session = boto3.session.Session()
    if session.region_name:
        return session
    if region := os.environ.get("AWS_REGION"):
        return boto3.session.Session(region_name=region)
    raise UnusableInput("no AWS region: set AWS_DEFAULT_REGION or AWS_REGION, or a region in your AWS config profile")


def positive_int(text: str) -> int:
    """An argparse type: a whole number of 1 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is below 1")
    return value


def positive_float(text: str) -> float:
    """An argparse type: a number above 0 (hours, say)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is not above 0")
    return value
