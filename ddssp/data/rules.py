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

from ddssp.errors import SchemaError

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
#: the unquoted value naming a column's missing level (when no level is labelled so)
MISSING = "missing"
_TOKEN = re.compile(r'\s*(?:(->)|(==|!=|<=|>=|<|>)|"([^"]*)"|([^\s"=!<>]+))')
_NAME = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*:(?!=)")


class RuleError(SchemaError):
    """A consistency rule that cannot be read, or does not fit the schema."""


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
        value = f'"{self.value}"' if self.literal else _quote(self.value)
        return f"{_quote(self.column)} {self.op} {value}"


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
        return f"{self.name}: {_quote(self.column)} depends on {' and '.join(map(_quote, self.by))}"

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class CompiledRule:
    """A rule as the cells it forbids, on the codes of a schema.

    Attributes
    ----------
    rule : Rule or Dependency
        The rule (a dependency's table is decided from a model:
        :func:`ddssp.marginals.rules_model.dependency_zeros`).
    columns : tuple of str
        The columns of the forbidden table, in schema order.
    forbidden : numpy.ndarray
        Boolean, one axis per column (its levels): True on the cells that break the rule.
    """

    rule: Rule | Dependency
    columns: tuple[str, ...]
    forbidden: np.ndarray

    def broken(self, codes: pd.DataFrame) -> np.ndarray:
        """For every row of integer codes, whether it breaks the rule.

        Parameters
        ----------
        codes : pandas.DataFrame
            Integer codes under the rule's schema (at least the rule's columns).

        Returns
        -------
        numpy.ndarray
            Boolean, one entry per row.
        """
        idx = tuple(np.asarray(codes[c], dtype=np.int64) for c in self.columns)
        return self.forbidden[idx]


def _quote(s: str) -> str:
    return s if re.fullmatch(r'[^\s"=!<>]+', s) and s not in ("and", "or") and s != "->" else f'"{s}"'


def _number(s: Any) -> float | None:
    try:
        x = float(s)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


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
        isinstance(rules, str) and "->" not in rules and "\n" not in rules and " depends on " not in rules
    ):
        return load_rules(rules)
    if isinstance(rules, str):
        return parse_rules(rules)
    if isinstance(rules, Sequence) and all(isinstance(r, (Rule, Dependency)) for r in rules):
        if len(rules) > MAX_RULES:
            raise RuleError(f"{len(rules)} rules; at most {MAX_RULES}")
        return list(rules)
    return parse_rules(rules)


def _level_truth(column: Any, cond: Condition, rule: str) -> np.ndarray:
    """For each level of ``column``: does ``cond`` hold (bool array), refusing a cut bin."""
    labels = [str(x) for x in column.labels]
    v, op = cond.value, cond.op
    num = _number(v)
    n = len(labels)
    missing = column.missing_code
    if op in ("==", "!="):
        eq = np.array([lab == v or (num is not None and _number(lab) == num) for lab in labels])
        if column.kind == "numeric" and column.edges is None and num is not None:
            vals = np.asarray(column.values, dtype=float)
            eq |= np.isfinite(vals) & (vals == num)
        if not eq.any() and v == MISSING and not cond.literal and missing is not None:
            eq[missing] = True  # the column's missing level, whatever its label
        if not eq.any():
            shown = ", ".join(labels[:12]) + (" ..." if n > 12 else "")
            raise RuleError(f"rule {rule!r}: column {column.name!r} has no level {v!r} (its levels: {shown})")
        return eq if op == "==" else ~eq
    if num is None:
        raise RuleError(f"rule {rule!r}: {cond} compares with {v!r}, which is not a number")
    cmp = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}[op]
    out = np.zeros(n, dtype=bool)
    if column.kind == "numeric" and column.edges is not None:
        edges = [float(e) for e in column.edges]
        for i in range(len(edges) - 1):
            lo, hi, last = edges[i], edges[i + 1], i == len(edges) - 2
            # the bin holds [lo, hi) (the last one [lo, hi]); does op hold on all of it, none of it?
            if op == "<":
                every, none = (hi < num) if last else (hi <= num), lo >= num
            elif op == "<=":
                every, none = hi <= num, lo > num
            elif op == ">":
                every, none = lo > num, hi <= num
            else:  # >=
                every, none = lo >= num, (hi < num) if last else (hi <= num)
            if not (every or none):
                raise RuleError(
                    f"rule {rule!r}: {cond} cuts the bin {labels[i]} of {column.name!r}; "
                    f"declare an edge at {v} in the schema (rules must follow bin edges)"
                )
            out[i] = every
        return out
    if column.kind == "numeric":
        vals = np.asarray(column.values, dtype=float)
    else:
        vals = np.array([np.nan if _number(lab) is None else _number(lab) for lab in labels])
    if missing is not None:
        vals[missing] = np.nan
    if not np.isfinite(vals).any():
        raise RuleError(f"rule {rule!r}: {cond} compares numbers, but {column.name!r} has no numeric level")
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(vals), cmp(vals, num), False)


def _level_values(column: Any, rule: str) -> np.ndarray:
    """The number each level stands for (NaN: not a number, or the missing level); a binned column
    is refused (its levels are ranges)."""
    if column.kind == "numeric" and column.edges is not None:
        raise RuleError(
            f"rule {rule!r}: {column.name!r} is binned; compare it with a number at a bin edge, not a column"
        )
    if column.kind == "numeric":
        vals = np.asarray(column.values, dtype=float).copy()
    else:
        vals = np.array([np.nan if _number(lab) is None else _number(lab) for lab in column.labels])
    if column.missing_code is not None:
        vals[column.missing_code] = np.nan
    return vals


def _pair_truth(a: Any, b: Any, cond: Condition, rule: str) -> np.ndarray:
    """For each pair of levels (a's, b's): does ``a op b`` hold. ``==`` / ``!=`` compare numbers, or
    labels where a level is not a number; order comparisons need two numbers."""
    va, vb = _level_values(a, rule), _level_values(b, rule)
    x, y = va[:, None], vb[None, :]
    both = np.isfinite(x) & np.isfinite(y)
    if cond.op in ("==", "!="):
        la = np.array([str(v) for v in a.labels], dtype=object)[:, None]
        lb = np.array([str(v) for v in b.labels], dtype=object)[None, :]
        with np.errstate(invalid="ignore"):
            eq = np.where(both, x == y, la == lb)
        return eq if cond.op == "==" else ~eq
    cmp = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}[cond.op]
    with np.errstate(invalid="ignore"):
        return np.where(both, cmp(x, y), False)


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
            truth = _pair_truth(schema.column(a), schema.column(b), cond, rule.name)
            if cols.index(a) > cols.index(b):
                truth, a, b = truth.T, b, a
            shape = [1] * len(cols)
            shape[cols.index(a)], shape[cols.index(b)] = truth.shape
            return truth.reshape(shape)
        truth = _level_truth(schema.column(cond.column), cond, rule.name)
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


def compile_rules(rules: Any, schema: Any) -> list[CompiledRule]:
    """Rules (see :func:`as_rules`) checked against a schema and compiled; dependencies are checked
    (:func:`_check_dependency`) and left out (their cells are decided from a model).

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
        c = None if isinstance(r, Dependency) else compile_rule(r, schema)
        total += _check_dependency(r, schema) if c is None else c.forbidden.size
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
