"""The one Lambda asset: `lambdas/trainguard` plus the pure-Python packages its handlers import.

Powertools is not part of the Lambda Python runtime, and there is no Docker daemon on the machines
that synthesize this app, so the asset is bundled locally: the package and its pure-Python
dependencies are copied from the interpreter running `cdk synth` (the one `make setup` installed from
requirements.txt). boto3, botocore and jmespath come with the Lambda runtime and are left out.

Only pure-Python packages may be listed here: the asset runs on arm64, whatever machine built it. A
package with compiled extensions (pydantic_core, for Powertools' parser) would need
`pip install --platform manylinux2014_aarch64 --only-binary=:all: --target ...` instead.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import shutil
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_

REPO_ROOT = Path(__file__).resolve().parent.parent
LAMBDA_SOURCE_DIR = REPO_ROOT / "lambdas"
GUARD_PACKAGE = "trainguard"
# (import name, distribution name): the distribution's version goes into the asset's cache key.
BUNDLED_PACKAGES: tuple[tuple[str, str], ...] = (
    ("aws_lambda_powertools", "aws-lambda-powertools"),
    ("typing_extensions", "typing-extensions"),
)
_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo")


class BundlingError(RuntimeError):
    """A package the Lambda asset needs is not installed in the interpreter that runs the synth."""


def installed_location(import_name: str) -> Path:
    """The package directory (or single-module file) that `import import_name` would load."""
    spec = importlib.util.find_spec(import_name)
    if spec is None:
        raise BundlingError(f"{import_name} is not installed in this interpreter; run `make setup`")
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    if spec.origin is None:
        raise BundlingError(f"{import_name} has no file to copy (namespace or built-in module)")
    return Path(spec.origin)


def copy_into(source: Path, output_dir: Path) -> None:
    target = output_dir / source.name
    if source.is_dir():
        shutil.copytree(source, target, ignore=_IGNORED, dirs_exist_ok=True)
    else:
        shutil.copy2(source, target)


@jsii.implements(ILocalBundling)
class CopyInstalledPackages:
    """Local bundler: the guard package from the source tree, the rest from site-packages."""

    def __init__(self, source_dir: Path, import_names: tuple[str, ...]) -> None:
        self._source_dir = source_dir
        self._import_names = import_names

    def try_bundle(self, output_dir: str, *_args: Any, **_options: Any) -> bool:
        out = Path(output_dir)
        copy_into(self._source_dir / GUARD_PACKAGE, out)
        for import_name in self._import_names:
            copy_into(installed_location(import_name), out)
        return True


def bundled_versions() -> dict[str, str]:
    """Versions of the bundled distributions, e.g. {"aws-lambda-powertools": "3.37.0"}."""
    versions: dict[str, str] = {}
    for import_name, dist_name in BUNDLED_PACKAGES:
        try:
            versions[dist_name] = importlib.metadata.version(dist_name)
        except importlib.metadata.PackageNotFoundError:
            raise BundlingError(f"{dist_name} ({import_name}) is not installed; run `make setup`") from None
    return versions


def guard_code() -> lambda_.Code:
    """The asset both functions run. Its hash is taken over the bundled output, so it changes
    when the handlers change or when a bundled package's version changes."""
    versions = bundled_versions()
    return lambda_.Code.from_asset(
        str(LAMBDA_SOURCE_DIR),
        asset_hash_type=AssetHashType.OUTPUT,
        exclude=["**/__pycache__", "**/*.pyc"],
        bundling=BundlingOptions(
            # Never pulled: the local bundler always succeeds. Docker would only run if it returned False.
            image=DockerImage.from_registry("public.ecr.aws/sam/build-python3.14"),
            local=CopyInstalledPackages(LAMBDA_SOURCE_DIR, tuple(name for name, _ in BUNDLED_PACKAGES)),
            # Not read by the bundler: it puts the versions into the bundling cache key, so a
            # cdk.out left from an older Powertools is never reused.
            environment={f"BUNDLED_{name.upper().replace('-', '_')}": v for name, v in versions.items()},
        ),
    )
