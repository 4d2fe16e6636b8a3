"""MkDocs hooks (mkdocs.yml, `hooks:`): the site's benchmarks page is BENCHMARKS.md from the repository's root,
included by a snippet, and it shows BENCHMARKS.png beside it. This puts that picture in the site as if it lay
in docs/, so the page's link resolves there as it does on GitHub, and strict mode checks it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT_PICTURES = ("BENCHMARKS.png",)  # written by `make bench`, next to BENCHMARKS.md


def on_files(files: Files, config: Any) -> Files:
    root = Path(config["config_file_path"]).parent
    for name in ROOT_PICTURES:
        files.append(File.generated(config, name, abs_src_path=str(root / name)))
    return files
