"""Consistency rules: public knowledge about which combinations of values cannot occur.

A rule reads ``[name:] CONDITION {and CONDITION} -> CONDITION {or CONDITION}``: whenever every
condition left of the arrow holds, at least one right of it must hold. A condition is
``COLUMN OP VALUE`` with OP one of ``==  !=  <  <=  >  >=``; a column name or value with spaces or
operator characters is written in double quotes. Examples (the NIST ACS excerpts, where ``N`` is
the level "not applicable")::

    child_MSP: AGEP < 15 -> MSP == N
    child_EDU: AGEP < 15 -> EDU == N or EDU < 12
    too_many_children: NOC != N and NPF != N -> NOC < NPF
    gq_NOC: HOUSING_TYPE > 1 -> NOC == N

A line may instead declare a functional dependency, ``[name:] COLUMN depends on COLUMN {and
COLUMN}``: within each group of the right-hand columns' values the left one takes one value (the
NIST dictionary's DENSITY is the "population density among residents of each PUMA":
``density_by_puma: DENSITY depends on PUMA``). Only the dependency is declared, never the values:
each group's level is read from the release's model (post-processing,
:func:`ddssp.marginals.rules_model.dependency_zeros`) and every synthetic row of the group gets it.

A line may also declare an order, ``[name:] COLUMN increases with COLUMN [within COLUMN]`` (the dictionary's
PINCP_DECILE ranks PINCP: ``decile_of_income: PINCP_DECILE increases with PINCP``), followed the
same way from the model (:mod:`ddssp.data.orders`).

A rules file holds one rule per line; blank lines and lines starting with ``#`` are skipped.

How a condition reads a column's levels (the schema's levels, never the data):

* ``==`` and ``!=`` compare the value with each level's label, and, when both are numbers, as
  numbers (``1`` matches the label ``1.0``). The unquoted word ``missing`` names the column's
  missing level (``--na-values``; unless a level is labelled ``missing``). The value must match a
  level of the column: a rule naming a level the column does not have is refused (a typo would
  make it empty).
* ``<``, ``<=``, ``>``, ``>=`` need a number. A level whose label (categorical) or representative
  value (numeric levels) is not a number, such as ``N`` or a missing level, satisfies none of them.
  A binned numeric column compares the bin: ``AGEP < 15`` holds on ``[10, 15)`` and fails on
  ``[15, 20)``. A rule whose threshold falls strictly inside a bin (``AGEP < 15`` on ``[10, 20)``)
  cannot be decided on the model's codes and is refused, naming the bin: declare an edge at the
  threshold in the schema (values inside a bin are drawn inside it, so a rule that follows the
  edges holds for the decoded values too).

A rule over columns C is compiled (:func:`compile_rules`) into the cells of the marginal over C that
break it (its structural zeros): synthetic rows are drawn from the model conditioned on no row
falling in them (:mod:`ddssp.marginals.rules_model`). A dependency is checked against the schema
there and compiled later, from the model (:func:`dependencies` lists them). Rules are public input:
they are charged nothing, written into the release as text and validated again when it is read.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ddssp.data.orders import Order, check_order, parse_order
from ddssp.data.rule_levels import (
    CompiledRule,
    RuleError,
    level_truth,
    pair_truth,
    quote,
)

#: at most this many rules in a file or a release
MAX_RULES = 500
#: at most this many characters in one rule
MAX_RULE_CHARS = 1000
#: at most this many conditions in one rule
MAX_CONDITIONS = 16
#: at most this many cells in the marginal a rule is compiled to, and in all of a release's rules together
MAX_RULE_CELLS = 10_000_000
#: the largest rules file read (bytes)
MAX_RULES_FILE_BYTES = 1_000_000

OPS = ("==", "!=", "<=", ">=", "<", ">")
_TOKEN = re.compile(r'\s*(?:(->)|(==|!=|<=|>=|<|>)|"([^"]*)"|([^\s"=!<>]+))')
_DECLARATION = re.compile(r"\s(depends on|increases with)\s")
#: a rule's name before its colon; ``rule N`` is the name a rule given without one gets, so the
#: canonical text a release stores (``rule 3: A == x -> B == y``) reads back as the same rule
_NAME = re.compile(r"^\s*(rule \d+|[A-Za-z_][A-Za-z0-9_.-]*)\s*:(?!=)")


@dataclass(frozen=True)
class Condition:
    """One condition ``column op value`` of a rule.

    Attributes
    ----------
    column : str
        The column compared.
    op : str
        One of ``==  !=  <  <=  >  >=``.
    value : str
        A level, a number, or (unquoted) another column's name.
    literal : bool
        The value was written in quotes: always a level, never another column.
    """

    column: str
    op: str
    value: str
    literal: bool = False

    def __str__(self) -> str:
        value = f'"{self.value}"' if self.literal else quote(self.value)
        return f"{quote(self.column)} {self.op} {value}"


@dataclass(frozen=True)
class Rule:
    """A rule: when every condition of ``when`` holds, one of ``then`` must hold.

    Attributes
    ----------
    name : str
        The rule's name (given before a colon, else ``rule N``).
    when : tuple of Condition
        The conditions left of the arrow (all must hold for the rule to apply).
    then : tuple of Condition
        The conditions right of the arrow (one must hold).
    """

    name: str
    when: tuple[Condition, ...]
    then: tuple[Condition, ...]

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns the rule names on the left of its conditions, in order of first mention."""
        return tuple(dict.fromkeys(c.column for c in self.when + self.then))

    @property
    def text(self) -> str:
        """The rule in its canonical text form (what a release stores)."""
        left = " and ".join(map(str, self.when))
        right = " or ".join(map(str, self.then))
        return f"{self.name}: {left} -> {right}"

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Dependency:
    """A declared functional dependency: within each combination of ``by``'s values, ``column`` takes
    one value (which one is not declared).

    Attributes
    ----------
    name : str
        The dependency's name (given before a colon, else ``rule N``).
    column : str
        The column that is fixed within a group.
    by : tuple of str
        The columns whose values form the groups.
    """

    name: str
    column: str
    by: tuple[str, ...]

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns named, the dependent one first."""
        return (self.column, *self.by)

    @property
    def text(self) -> str:
        """The dependency in its canonical text form (what a release stores)."""
        return f"{self.name}: {quote(self.column)} depends on {' and '.join(map(quote, self.by))}"

    def __str__(self) -> str:
        return self.text


def parse_rule(text: str, index: int = 1) -> Rule | Dependency:
    """Read one rule, or one dependency.

    Parameters
    ----------
    text : str
        ``[name:] CONDITION {and CONDITION} -> CONDITION {or CONDITION}``, or ``[name:] COLUMN
        depends on COLUMN {and COLUMN}``.
    index : int
        The rule's number, for its default name and the messages.

    Returns
    -------
    Rule or Dependency

    Raises
    ------
    RuleError
        One line saying what is wrong and where.
    """
    if not isinstance(text, str):
        raise RuleError(f"rule {index} must be text, got {type(text).__name__}")
    if len(text) > MAX_RULE_CHARS:
        raise RuleError(f"rule {index} has {len(text)} characters; at most {MAX_RULE_CHARS}")
    name, body = f"rule {index}", text
    m = _NAME.match(text)
    if m:
        name, body = m.group(1), text[m.end() :]
    tokens: list[tuple[str, str]] = []  # (kind, text): arrow, op, word
    pos = 0
    body = body.rstrip()
    while pos < len(body):
        t = _TOKEN.match(body, pos)
        if t is None or t.end() == pos:
            raise RuleError(f"rule {name!r}: cannot read {body[pos : pos + 30].strip()!r}")
        arrow, op, quoted, word = t.groups()
        if arrow:
            tokens.append(("arrow", arrow))
        elif op:
            tokens.append(("op", op))
        elif quoted is not None:
            tokens.append(("value", quoted))
        else:
            tokens.append(("word", word))
        pos = t.end()
    arrows = [i for i, (k, _) in enumerate(tokens) if k == "arrow"]
    if not arrows and tokens[1:3] == [("word", "depends"), ("word", "on")]:
        return _dependency(tokens, name)
    if not arrows and tokens[1:3] == [("word", "increases"), ("word", "with")]:
        return parse_order(tokens, name)
    if len(arrows) != 1:
        raise RuleError(f"rule {name!r} needs exactly one '->' (CONDITION [and ...] -> CONDITION [or ...])")
    when = _conditions(tokens[: arrows[0]], "and", name)
    then = _conditions(tokens[arrows[0] + 1 :], "or", name)
    if len(when) + len(then) > MAX_CONDITIONS:
        raise RuleError(f"rule {name!r} has {len(when) + len(then)} conditions; at most {MAX_CONDITIONS}")
    return Rule(name, tuple(when), tuple(then))


def _dependency(tokens: list[tuple[str, str]], name: str) -> Dependency:
    """``COLUMN depends on COLUMN {and COLUMN}`` from its tokens (the first three already read)."""
    usage = f"rule {name!r}: write COLUMN depends on COLUMN [and COLUMN ...]"
    if tokens[0][0] not in ("word", "value"):
        raise RuleError(usage)
    rest = tokens[3:]
    by = [t for kind, t in rest[0::2] if kind in ("word", "value")]
    joins = rest[1::2]
    if not rest or len(rest) % 2 == 0 or len(by) != len(rest[0::2]) or any(j != ("word", "and") for j in joins):
        raise RuleError(usage)
    column = tokens[0][1]
    if column in by or len(set(by)) != len(by):
        raise RuleError(f"rule {name!r}: each column may be named once ({column!r} depends on {by})")
    if len(by) + 1 > MAX_CONDITIONS:
        raise RuleError(f"rule {name!r} names {len(by) + 1} columns; at most {MAX_CONDITIONS}")
    return Dependency(name, column, tuple(by))


def _conditions(tokens: list[tuple[str, str]], joiner: str, name: str) -> list[Condition]:
    out = []
    i = 0
    while True:
        part = tokens[i : i + 3]
        if (
            len(part) < 3
            or part[0][0] not in ("word", "value")
            or part[1][0] != "op"
            or part[2][0] not in ("word", "value")
        ):
            got = " ".join(t for _, t in tokens[i : i + 3]) or "nothing"
            raise RuleError(f"rule {name!r}: expected COLUMN OP VALUE (OP one of {' '.join(OPS)}), got {got!r}")
        out.append(Condition(part[0][1], part[1][1], part[2][1], literal=part[2][0] == "value"))
        i += 3
        if i == len(tokens):
            return out
        if tokens[i] != ("word", joiner):
            raise RuleError(f"rule {name!r}: expected {joiner!r} between conditions, got {tokens[i][1]!r}")
        i += 1


def parse_rules(text: str | Sequence[str]) -> list[Rule | Dependency]:
    """Read rules (and dependencies) from a rules file's text (one per line) or a list of rule strings.

    Parameters
    ----------
    text : str or sequence of str
        The text (blank lines and ``#`` comments skipped) or the rules.

    Returns
    -------
    list of Rule or Dependency

    Raises
    ------
    RuleError
        For a rule that cannot be read, too many rules, or two rules with one name.
    """
    if isinstance(text, str):
        lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    elif isinstance(text, Sequence):
        lines = list(text)
    else:
        raise RuleError(f"rules must be text or a list of rule strings, got {type(text).__name__}")
    if len(lines) > MAX_RULES:
        raise RuleError(f"{len(lines)} rules; at most {MAX_RULES}")
    rules = [parse_rule(ln, i + 1) for i, ln in enumerate(lines)]
    seen: set[str] = set()
    for r in rules:
        if r.name in seen:
            raise RuleError(f"two rules are named {r.name!r}; give each rule its own name")
        seen.add(r.name)
    return rules


def load_rules(path: str | Path) -> list[Rule | Dependency]:
    """Read a rules file (UTF-8 text, one rule per line).

    Parameters
    ----------
    path : str or pathlib.Path
        The file.

    Returns
    -------
    list of Rule

    Raises
    ------
    RuleError
        For a missing, unreadable or oversized file, or a rule that cannot be read.
    """
    path = Path(path)
    try:
        if path.stat().st_size > MAX_RULES_FILE_BYTES:
            raise RuleError(f"rules file {path} is larger than {MAX_RULES_FILE_BYTES} bytes")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RuleError(f"rules file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise RuleError(f"cannot read rules file {path}: {e}") from None
    try:
        return parse_rules(text)
    except RuleError as e:
        raise RuleError(f"{path}: {e}") from None


def as_rules(rules: Any) -> list[Rule | Dependency]:
    """Rules from what a caller gives: None, a path, text, a list of strings or of :class:`Rule`.

    Parameters
    ----------
    rules : None, str, pathlib.Path, or sequence
        A path (``Path``, or a string naming an existing file without a ``->``), the text of rules,
        or rule strings / Rule and Dependency objects.

    Returns
    -------
    list of Rule or Dependency
    """
    if rules is None:
        return []
    if isinstance(rules, Path) or (
        isinstance(rules, str) and "->" not in rules and "\n" not in rules and not _DECLARATION.search(rules)
    ):
        return load_rules(rules)
    if isinstance(rules, str):
        return parse_rules(rules)
    if isinstance(rules, Sequence) and all(isinstance(r, (Rule, Dependency, Order)) for r in rules):
        if len(rules) > MAX_RULES:
            raise RuleError(f"{len(rules)} rules; at most {MAX_RULES}")
        return list(rules)
    return parse_rules(rules)


def compile_rule(rule: Rule, schema: Any) -> CompiledRule:
    """The cells of the marginal over the rule's columns (schema order) that break the rule.

    Parameters
    ----------
    rule : Rule
        The rule.
    schema : Schema
        The release's schema.

    Returns
    -------
    CompiledRule

    Raises
    ------
    RuleError
        For a column not in the schema, a level the column does not have, a threshold inside a
        bin, a marginal too large, or a rule every row breaks.
    """
    unknown = [c for c in rule.columns if c not in schema.names]
    if unknown:
        raise RuleError(f"rule {rule.name!r} names column(s) {unknown} not in the schema")
    names = set(schema.names)
    other = {c.value for c in rule.when + rule.then if not c.literal and c.value in names}
    cols = tuple(c for c in schema.names if c in rule.columns or c in other)
    sizes = [schema.column(c).size for c in cols]
    if math.prod(sizes) > MAX_RULE_CELLS:
        raise RuleError(f"rule {rule.name!r} spans {math.prod(sizes)} cells of {list(cols)}; at most {MAX_RULE_CELLS}")

    def table(cond: Condition) -> np.ndarray:
        if not cond.literal and cond.value in names:  # a comparison of two columns
            a, b = cond.column, cond.value
            truth = pair_truth(schema.column(a), schema.column(b), cond, rule.name)
            if cols.index(a) > cols.index(b):
                truth, a, b = truth.T, b, a
            shape = [1] * len(cols)
            shape[cols.index(a)], shape[cols.index(b)] = truth.shape
            return truth.reshape(shape)
        truth = level_truth(schema.column(cond.column), cond, rule.name)
        shape = [1] * len(cols)
        shape[cols.index(cond.column)] = len(truth)
        return truth.reshape(shape)

    applies = np.ones(sizes, dtype=bool)
    for c in rule.when:
        applies = applies & table(c)
    holds = np.zeros(sizes, dtype=bool)
    for c in rule.then:
        holds = holds | table(c)
    forbidden = np.broadcast_to(applies & ~holds, sizes).copy()
    if forbidden.all():
        raise RuleError(f"rule {rule.name!r} forbids every combination of {list(cols)}: no row could follow it")
    return CompiledRule(rule, cols, forbidden)


def _check_dependency(dep: Dependency, schema: Any) -> int:
    """Check a dependency against a schema (its columns exist, their table is not too large);
    return the number of cells of that table. Raises :class:`RuleError` otherwise."""
    unknown = [c for c in dep.columns if c not in schema.names]
    if unknown:
        raise RuleError(f"rule {dep.name!r} names column(s) {unknown} not in the schema")
    cells = math.prod(schema.column(c).size for c in dep.columns)
    if cells > MAX_RULE_CELLS:
        raise RuleError(f"rule {dep.name!r} spans {cells} cells of {list(dep.columns)}; at most {MAX_RULE_CELLS}")
    return cells


def dependencies(rules: Any) -> list[Dependency]:
    """The dependencies among rules (see :func:`as_rules`), in order.

    Parameters
    ----------
    rules : any
        What :func:`as_rules` takes.

    Returns
    -------
    list of Dependency
    """
    return [r for r in as_rules(rules) if isinstance(r, Dependency)]


def orders(rules: Any) -> list[Order]:
    """The orders among rules (see :func:`as_rules`), in order.

    Parameters
    ----------
    rules : any
        What :func:`as_rules` takes.

    Returns
    -------
    list of Order
    """
    return [r for r in as_rules(rules) if isinstance(r, Order)]


def compile_rules(rules: Any, schema: Any) -> list[CompiledRule]:
    """Rules (see :func:`as_rules`) checked against a schema and compiled; dependencies and orders are
    checked (:func:`_check_dependency`, :func:`ddssp.data.orders.check_order`) and left out (their
    cells are decided from a model).

    Parameters
    ----------
    rules : any
        What :func:`as_rules` takes.
    schema : Schema
        The release's schema.

    Returns
    -------
    list of CompiledRule

    Raises
    ------
    RuleError
        For a rule that cannot be read or does not fit the schema.
    """
    out, total = [], 0
    for r in as_rules(rules):
        c = None if isinstance(r, (Dependency, Order)) else compile_rule(r, schema)
        if c is None:
            total += check_order(r, schema) if isinstance(r, Order) else _check_dependency(r, schema)
        else:
            total += c.forbidden.size
        if total > MAX_RULE_CELLS:
            raise RuleError(f"the rules span more than {MAX_RULE_CELLS} cells in all (at rule {r.name!r})")
        if c is not None:
            out.append(c)
    return out


def broken_rows(codes: pd.DataFrame, compiled: Iterable[CompiledRule]) -> np.ndarray:
    """For every row of integer codes, whether it breaks any of the rules.

    Parameters
    ----------
    codes : pandas.DataFrame
        Integer codes under the rules' schema.
    compiled : iterable of CompiledRule
        The rules.

    Returns
    -------
    numpy.ndarray
        Boolean, one entry per row.
    """
    bad = np.zeros(len(codes), dtype=bool)
    for r in compiled:
        bad |= r.broken(codes)
    return bad


def rule_counts(codes: pd.DataFrame, compiled: Iterable[CompiledRule]) -> list[dict[str, Any]]:
    """How many rows break each rule.

    Parameters
    ----------
    codes : pandas.DataFrame
        Integer codes under the rules' schema.
    compiled : iterable of CompiledRule
        The rules.

    Returns
    -------
    list of dict
        Per rule: ``rule`` (its name), ``text`` and ``rows`` (the count).
    """
    return [{"rule": r.rule.name, "text": r.rule.text, "rows": int(r.broken(codes).sum())} for r in compiled]


def dependency_violations(codes: pd.DataFrame, deps: Iterable[Dependency]) -> list[dict[str, Any]]:
    """How many rows break each dependency: in each group, the rows away from its most common value.

    Parameters
    ----------
    codes : pandas.DataFrame
        Integer codes (or any values) of at least the dependencies' columns.
    deps : iterable of Dependency
        The dependencies.

    Returns
    -------
    list of dict
        Per dependency: ``rule`` (its name), ``text``, ``rows`` (0 exactly when every group holds
        one value) and ``groups`` (the groups holding more than one).
    """
    out = []
    for d in deps:
        if len(codes) == 0:
            out.append({"rule": d.name, "text": d.text, "rows": 0, "groups": 0})
            continue
        counts = codes.groupby([*d.by, d.column], sort=False, observed=True).size()
        by_group = counts.groupby(level=list(range(len(d.by))), sort=False)
        rows = int(len(codes) - by_group.max().sum())
        groups = int((by_group.size() > 1).sum())
        out.append({"rule": d.name, "text": d.text, "rows": rows, "groups": groups})
    return out
