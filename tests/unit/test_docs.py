"""The documentation site (mkdocs.yml over docs/) and the README: what `make docs` cannot check itself.

`make docs` builds the site in strict mode, which fails on a broken link or anchor and on a page left
out of the nav; these tests keep the rules that hold without a build: every page in the nav, links to
the repository's other files written as paths, a short README that shows the commands and the deploy
first, and no count that rots.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

REPOSITORY = Path(__file__).parents[2]
DOCS = REPOSITORY / "docs"
README = REPOSITORY / "README.md"
README_MOST_LINES = 250  # issue 13: a README a newcomer reads in five minutes
FIRST_SCREEN_LINES = 60  # what a code host shows of a README before one scrolls
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")
SNIPPET = re.compile(r'^--8<-- "([^"]+)"$', re.MULTILINE)


def _config() -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load((REPOSITORY / "mkdocs.yml").read_text())
    return config


def _nav_pages(entries: list[Any]) -> list[str]:
    pages: list[str] = []
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        pages.extend(_nav_pages(value) if isinstance(value, list) else [value])
    return pages


def _pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def test_the_site_is_built_from_docs_in_strict_mode() -> None:
    config = _config()
    assert config["docs_dir"] == "docs"
    assert config["strict"] is True
    # Left at MkDocs' default ("info"), these would not fail a strict build.
    assert all(config["validation"][key] == "warn" for key in ("omitted_files", "unrecognized_links", "anchors"))


def test_every_page_is_in_the_nav_once_and_every_nav_entry_is_a_page() -> None:
    nav = _nav_pages(_config()["nav"])
    assert len(nav) == len(set(nav)), nav
    assert sorted(nav) == sorted(str(p.relative_to(DOCS)) for p in _pages())


def test_the_nav_starts_where_a_new_user_starts() -> None:
    nav = _nav_pages(_config()["nav"])
    assert nav[:3] == ["index.md", "getting-started.md", "tags.md"]


def test_links_from_the_pages_stay_inside_the_site() -> None:
    # A link to a file outside docs/ (../lambdas/..., ../SECURITY.md) is a dead link on the site: the
    # repository's other files are named as code paths from its root instead, and the two documents the
    # site shows whole (SECURITY.md, BENCHMARKS.md) are included by a snippet.
    outside = []
    for page in _pages():
        for target in MARKDOWN_LINK.findall(page.read_text()):
            if target.startswith(("http://", "https://", "#")):
                continue
            path = target.split("#", 1)[0]
            if not path.endswith(".md") or not (page.parent / path).resolve().is_relative_to(DOCS.resolve()):
                outside.append(f"{page.name}: {target}")
    assert outside == [], outside


def test_every_included_file_exists_at_the_repository_root() -> None:
    included = {name for page in _pages() for name in SNIPPET.findall(page.read_text())}
    assert included >= {"SECURITY.md", "BENCHMARKS.md"}
    assert all((REPOSITORY / name).is_file() for name in included), included


def test_the_readme_is_short_and_shows_the_two_commands_and_the_deploy_first() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= README_MOST_LINES, len(lines)
    first_screen = "\n".join(lines[:FIRST_SCREEN_LINES])
    for command in ("make demo", "make test", "cdk deploy"):
        assert command in first_screen, command


def test_no_page_states_a_count_of_tests() -> None:
    # Counts of tests rot with every commit (issue 13); figures come from commands (BENCHMARKS.md).
    count = re.compile(r"\b\d[\d,]* (?:unit |integration |infra )?tests\b")
    stated = [f"{p.name}: {m}" for p in [README, *_pages()] for m in count.findall(p.read_text())]
    assert stated == [], stated


def test_make_docs_builds_strict_without_quiet_and_ci_runs_it() -> None:
    # `mkdocs build --strict --quiet` passes whatever strict mode finds: --quiet drops the warnings it counts.
    recipe = (REPOSITORY / "Makefile").read_text().split("\ndocs:", 1)[1].split("\n\n", 1)[0]
    assert "mkdocs build --strict" in recipe
    assert "--quiet" not in recipe and " -q" not in recipe
    assert "make docs" in (REPOSITORY / ".ci" / "run").read_text().splitlines()


def test_the_architecture_page_maps_every_module_of_the_tree() -> None:
    from trainguard_local.commands.module_map import problems

    assert problems() == []


def test_a_module_without_a_place_in_the_map_fails_the_check(tmp_path: Path) -> None:
    from trainguard_local.commands.module_map import END, PACKAGES, START, problems, write

    for package in PACKAGES:
        (tmp_path / package).mkdir(parents=True)
        (tmp_path / package / "__init__.py").write_text('"""A package."""\n')
        (tmp_path / package / "one.py").write_text('"""One module. More after."""\n')
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "architecture.md").write_text(f"# Architecture\n\n{START}\n{END}\n")
    write(tmp_path)
    assert problems(tmp_path) == []
    assert "| `infra/one.py` | One module. |" in (tmp_path / "docs" / "architecture.md").read_text()
    (tmp_path / "infra" / "two.py").write_text('"""Two."""\n')
    (tmp_path / "cli/trainguard_cli" / "__init__.py").write_text('"""Two lines\nin its first paragraph."""\n')
    assert len(problems(tmp_path)) == 2
