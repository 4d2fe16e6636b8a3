"""The architecture page's map of every module of the product, made from the modules' own docstrings.

`make docs` runs `python -m trainguard_local.commands.module_map` before the site is built: it fails when the
map in docs/architecture.md is not the one the tree gives (a module added, moved or removed, a docstring
changed) or when a package has no docstring. `--write` puts the tree's map into the page.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PAGE = Path("docs", "architecture.md")
PRODUCT = ("lambdas/trainguard", "infra", "cli/trainguard_cli", "sdk/trainguard_sdk")
PACKAGES = (*PRODUCT, "local/trainguard_local")
START, END = "<!-- module map: start -->", "<!-- module map: end -->"


def summary(path: Path) -> str:
    """The first sentence of a module's docstring, on one line."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    paragraph = " ".join(doc.split("\n\n", 1)[0].split())
    sentence = paragraph.split(". ", 1)[0].rstrip(".")
    return (sentence + ".").replace("|", "/") if sentence else ""


def module_map(root: Path = ROOT) -> str:
    parts = []
    for package in PRODUCT:
        rows = [
            f"| `{path.relative_to(root).as_posix()}` | {summary(path)} |"
            for path in sorted((root / package).rglob("*.py"))
            if path.name != "__init__.py"
        ]
        parts.append(f"### `{package}/`\n\n| module | what it holds |\n|---|---|\n" + "\n".join(rows))
    return "\n\n".join(parts)


def problems(root: Path = ROOT) -> list[str]:
    found = []
    for package in PACKAGES:
        for init in sorted((root / package).rglob("__init__.py")):
            doc = ast.get_docstring(ast.parse(init.read_text())) or ""
            if not doc.strip():
                found.append(f"{init.relative_to(root)}: a package needs a docstring that says what it holds")
            elif "\n" in doc.strip().split("\n\n", 1)[0]:
                found.append(f"{init.relative_to(root)}: its docstring's first paragraph is more than one line")
    page = (root / PAGE).read_text()
    if START not in page or END not in page:
        found.append(f"docs/architecture.md has no module map between {START} and {END}")
    elif page.split(START, 1)[1].split(END, 1)[0].strip() != module_map(root):
        found.append("docs/architecture.md's module map is not the tree's: run `make module-map` and read the diff")
    return found


def write(root: Path = ROOT) -> None:
    page = (root / PAGE).read_text()
    before, rest = page.split(START, 1)
    after = rest.split(END, 1)[1]
    (root / PAGE).write_text(f"{before}{START}\n\n{module_map(root)}\n\n{END}{after}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="write the tree's module map into the page")
    if parser.parse_args(argv).write:
        write()
    found = problems()
    for problem in found:
        print(f"module map: {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
