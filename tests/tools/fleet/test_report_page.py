"""The HTML report's words (issue 26): it says first that it is a simulation, of what; it leads with what trainguard
changes; its headers are words with their definitions beside them; it says plainly where trainguard misses a goal;
it lists its assumptions and a Sources section. The run is a small trace's under the anchors (milliseconds), with
a stand-in for trainguard's figures: the words are judged here, the real run in tests/tools/test_fleet_demo.py."""

from __future__ import annotations

import copy
import re
from html.parser import HTMLParser
from typing import Any

import pytest

from trainguard_local.fleet.anchors import anchor_strategies
from trainguard_local.fleet.goals import WASTE_BELOW, goal_checks
from trainguard_local.fleet.html_report import ReportPage, render
from trainguard_local.fleet.simulate import simulate_trace
from trainguard_local.fleet.summary import STRATEGY_COLUMNS
from trainguard_local.fleet.words import STRATEGY_NAMES, strategy_name
from trainguard_local.simulation.trace import generate_trace

WASTE_GOAL = f"wasted GPU-hours at least {WASTE_BELOW:.0%} below no guard's"


@pytest.fixture(scope="module")
def page() -> ReportPage:
    """The anchors on 20 jobs, and as trainguard's figures AWS Batch's with a tenth of no guard's hung hours."""
    trace = generate_trace(20, 24, 7)
    report, outcomes = simulate_trace(trace, anchor_strategies())
    guard = copy.deepcopy(report["strategies"]["aws_batch"])
    guard["wasted_gpu_hours_hung_or_idle"] = report["strategies"]["none"]["wasted_gpu_hours_hung_or_idle"] / 20
    report["strategies"]["trainguard"] = guard
    outcomes["trainguard"] = outcomes["aws_batch"]
    return ReportPage("trainguard on a simulated fleet", "trainguard simulate", report, trace, outcomes, [], [])


class _Sections(HTMLParser):
    """The page's text in order, each h2's id, and each table's header cells by the table's id."""

    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.sections: list[str] = []
        self.headers: dict[str, list[str]] = {}
        self._table, self._in_th = "", False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "h2":
            self.sections.append(found.get("id") or "")
        elif tag == "table":
            self._table = found.get("id") or ""
            self.headers[self._table] = []
        self._in_th = tag == "th"

    def handle_endtag(self, tag: str) -> None:
        self._in_th = self._in_th and tag != "th"

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._in_th:
            self.headers[self._table].append(data)


def _read(html: str) -> _Sections:
    parsed = _Sections()
    parsed.feed(html)
    return parsed


def test_the_page_says_first_that_it_is_a_simulation_of_which_fleet(page: ReportPage) -> None:
    html = render(page)
    first = html[html.index("<h1>") : html.index("<table")]  # all that comes before the first figure
    assert "This page is a simulation, not a measurement of a real fleet." in first
    trace = page.report["trace"]
    assert f"{trace['jobs']} training jobs" in first and f"over {trace['hours']:g} hours" in first
    assert f"seed {trace['seed']}" in first
    for kind, count in trace["faults_by_kind"].items():
        if count:
            assert f"({count})" in first and kind not in first  # each kind with its count, named in words


def test_it_leads_with_what_trainguard_changes_then_its_goals_then_the_strategies(page: ReportPage) -> None:
    read = _read(render(page))
    assert read.sections[:3] == ["changes", "goals", "strategies"]
    assert {"assumptions", "sources"} <= set(read.sections)
    text = " ".join(read.text)
    none, guard = (page.report["strategies"][name] for name in ("none", "trainguard"))
    hung = [f"{f['wasted_gpu_hours_hung_or_idle']:,.1f}" for f in (none, guard)]
    assert f"<tr><td>hung or idle GPU-hours</td><td>{hung[0]}</td><td>{hung[1]}</td>" in render(page)
    assert f"{none['wasted_dollars_hung_or_idle']:,.0f}" in text and "is what a guard can save" in text
    assert "is set by how often each training script checkpoints" in text


def test_every_header_is_in_words_with_its_definition_beside_it(page: ReportPage) -> None:
    html = render(page)
    read = _read(html)
    for name in ("changes-table", "strategies-table"):
        assert read.headers[name] and not any("_" in header for header in read.headers[name]), read.headers[name]
    assert read.headers["strategies-table"] == [header for header, _ in STRATEGY_COLUMNS]
    beside = html[html.index('<table id="strategies-table">') : html.index('<dl id="columns">')]
    assert beside.count("</table>") == 1  # the definitions follow the table at once
    for header, definition in STRATEGY_COLUMNS:
        assert f"<dt>{header}</dt><dd>{definition.replace(chr(39), '&#x27;')}</dd>" in html
    for name in page.report["strategies"]:  # every strategy that ran named and described in words
        assert name in STRATEGY_NAMES and f"<dt>{strategy_name(name)}</dt>" in html


def test_each_missed_goal_is_said_plainly(page: ReportPage) -> None:
    checks = goal_checks(page.report)
    missed = [check for check in checks if check.met is False]
    assert any(check.goal == WASTE_GOAL for check in missed)  # the stand-in's waste is AWS Batch's
    text = " ".join(" ".join(_read(render(page)).text).split())
    assert f"In this run trainguard misses {len(missed)} of its {len(checks)} goals" in text
    for check in missed:
        assert f"Missed: {check.goal} (issue {check.issue})" in text.replace("&#x27;", "'")


def test_every_goal_names_the_issue_that_set_it(page: ReportPage) -> None:
    costed = {**page.report, "guard_cost": {"share_of_guarded_compute_percent": 0.001, "goal_share_percent": 0.05}}
    checks = goal_checks(costed)
    [cost] = [check for check in checks if "own AWS cost" in check.goal]
    assert cost.met is True and cost.issue == 5
    assert {check.issue for check in checks} == {5, 11, 14, 27, 28}


def test_a_goal_met_is_not_said_missed(page: ReportPage) -> None:
    report: dict[str, Any] = copy.deepcopy(page.report)
    report["strategies"]["trainguard"]["wasted_gpu_hours"] = report["strategies"]["none"]["wasted_gpu_hours"] / 20
    [waste] = [check for check in goal_checks(report) if check.goal == WASTE_GOAL]
    assert waste.met is True and waste.measured.startswith("95.0% below")


def test_the_assumptions_and_the_sources_are_listed(page: ReportPage) -> None:
    html = render(page)
    assumptions = html[html.index('<h2 id="assumptions">') :]
    assert "median 4 h" in assumptions and "local/trainguard_local/fleet/person.py (PersonOnCall)" in assumptions
    sources = html[html.index('<h2 id="sources">') :]
    for figures in page.report["strategies"].values():
        for text in figures["sources"]:
            if text.startswith("https://"):
                assert f'<a href="{text}">' in sources
    assert re.search(r'<a href="https://arxiv.org/abs/2407.21783">', sources)
