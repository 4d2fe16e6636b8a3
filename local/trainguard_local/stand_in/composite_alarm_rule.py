"""Composite alarms' AlarmRule for the CloudWatch emulator (alarm_evaluator.py), which moto lacks: its parser
and its evaluation on the child alarms' states. [API]: PutCompositeAlarm's documentation (alarm_evaluation.py
cites it)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NoReturn

from trainguard_local.stand_in.alarm_evaluation import ALARM, INSUFFICIENT_DATA, OK

# [API] AlarmRule: ALARM("alarm-name or alarm-ARN"), OK(...), INSUFFICIENT_DATA(...), TRUE, FALSE,
# "operators (AND, OR and NOT)" and parentheses; "Alarm names specified in AlarmRule can be surrounded
# with double-quotes ("), but do not have to be." Precedence is not documented: NOT binds tighter than
# AND, AND tighter than OR (assumed). A composite is ALARM when its rule holds, else OK: "this initial
# time after creation is the only time that the alarm can be in INSUFFICIENT_DATA state" [API].
_FUNCTIONS = {"ALARM": ALARM, "OK": OK, "INSUFFICIENT_DATA": INSUFFICIENT_DATA}
Node = tuple[Any, ...]  # ("const", bool) | ("state", wanted, name) | ("not", Node) | ("and"|"or", Node, Node)


def parse_alarm_rule(rule: str) -> tuple[Node, tuple[str, ...]]:
    """The rule's syntax tree and the alarms it names (in order of first mention). Errors read like
    AWS's "Error in AlarmRule [Unsupported token ')' at char 1]" (reported in aws/aws-cdk#34662)."""
    parser = _RuleParser(rule)
    node = parser.parse_or()
    if parser.skip_space() < len(rule):
        parser.fail()
    return node, tuple(dict.fromkeys(parser.names))


def evaluate_composite(rule: str, states: Mapping[str, str]) -> str:
    """ALARM when the rule holds for `states` (alarm name -> state), else OK. A child may be named by ARN
    (`arn:aws:cloudwatch:<region>:<account>:alarm:<name>`). An unknown child raises ValueError: AWS will
    not save such a rule ("Could not save the composite alarm as alarms ... in the alarm rule do not
    exist", awsdocs/aws-cloudformation-user-guide#911), and the docs say nothing of evaluating one."""
    node, children = parse_alarm_rule(rule)
    unknown = [name for name in children if _state_of(name, states) is None]
    if unknown:
        raise ValueError(f"alarms [{', '.join(unknown)}] in the alarm rule do not exist")
    return ALARM if _holds(node, states) else OK


def _state_of(name: str, states: Mapping[str, str]) -> str | None:
    return states.get(name, states.get(name.split(":alarm:", 1)[-1]) if ":alarm:" in name else None)


def _holds(node: Node, states: Mapping[str, str]) -> bool:
    kind = node[0]
    if kind in ("const", "state"):
        return bool(node[1]) if kind == "const" else _state_of(node[2], states) == node[1]
    if kind == "not":
        return not _holds(node[1], states)
    if kind == "and":
        return _holds(node[1], states) and _holds(node[2], states)
    return _holds(node[1], states) or _holds(node[2], states)


class _RuleParser:
    """Recursive descent: or := and (OR and)*; and := not (AND not)*; not := NOT not | primary;
    primary := TRUE | FALSE | FUNCTION "(" name ")" | "(" or ")"; name := "quoted" | unquoted."""

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.names = text, 0, list[str]()

    def parse_or(self) -> Node:
        node = self.parse_and()
        while self.take("OR", word=True):
            node = ("or", node, self.parse_and())
        return node

    def parse_and(self) -> Node:
        node = self.parse_not()
        while self.take("AND", word=True):
            node = ("and", node, self.parse_not())
        return node

    def parse_not(self) -> Node:
        return ("not", self.parse_not()) if self.take("NOT", word=True) else self.parse_primary()

    def parse_primary(self) -> Node:
        if self.take("("):
            node = self.parse_or()
            self.expect(")")
            return node
        for word, value in (("TRUE", True), ("FALSE", False)):
            if self.take(word, word=True):
                return ("const", value)
        for function, wanted in _FUNCTIONS.items():
            if self.take(function, word=True):
                self.expect("(")
                self.names.append(self.alarm_name())
                return ("state", wanted, self.names[-1])
        self.fail()

    def alarm_name(self) -> str:
        start = self.skip_space()
        if self.take('"'):
            end = self.text.find('"', self.pos)
            if end < 0:
                raise ValueError(f"Error in AlarmRule [unterminated quoted alarm name at char {start}]")
            name, self.pos = self.text[self.pos : end], end + 1
            self.expect(")")
        else:
            end = self.text.find(")", self.pos)
            name = self.text[self.pos : len(self.text) if end < 0 else end]
            bad = min((i for i in (name.find("("), name.find('"')) if i >= 0), default=-1)
            if end < 0 or bad >= 0:
                self.pos += len(name) if bad < 0 else bad
                self.fail()
            name, self.pos = name.strip(), end + 1
        if not name:
            raise ValueError(f"Error in AlarmRule [empty alarm name at char {start}]")
        return name

    def skip_space(self) -> int:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1
        return self.pos

    def take(self, token: str, word: bool = False) -> bool:
        end = self.skip_space() + len(token)
        following = self.text[end : end + 1]
        if not self.text.startswith(token, self.pos) or (word and (following.isalnum() or following == "_")):
            return False
        self.pos = end
        return True

    def expect(self, token: str) -> None:
        if not self.take(token):
            self.fail()

    def fail(self) -> NoReturn:
        if self.skip_space() >= len(self.text):
            raise ValueError(f"Error in AlarmRule [unexpected end of the rule at char {self.pos}]")
        token = re.findall(r"\w+|\S", self.text[self.pos :])[0]
        raise ValueError(f"Error in AlarmRule [Unsupported token '{token}' at char {self.pos}]")
