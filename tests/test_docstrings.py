"""Every public function, class and method in ``ddssp`` has a numpydoc-style docstring.

Public means: a name without a leading underscore, defined (not imported) in a module whose path has no
component starting with an underscore (``__init__.py`` counts as its package). Methods are checked on
public classes; dunder methods are not (a class documents its constructor's parameters itself).

The rules, read from the source with :mod:`ast` (nothing is imported):

- there is a docstring;
- when the function takes parameters (other than ``self``/``cls``) it has an underlined ``Parameters``
  section naming each of them (``*args``/``**kwargs`` may be written with or without their stars;
  a parameter whose name starts with an underscore is private and need not be named);
- a class documents the parameters of the ``__init__`` it defines in ``Parameters``; a dataclass or
  named tuple names each of its fields in ``Attributes`` or ``Parameters``;
- a generator has a ``Yields`` section; any other function whose return annotation is not ``None`` or
  which returns a value has a ``Returns`` section;
- a property is documented like an attribute: a summary suffices.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ddssp"

# Files left out of the check, with the reason.
SKIPPED_FILES: dict[str, str] = {}

# Single objects ("path::Qualified.name") exempt from one rule, with the reason.
ALLOWED: dict[str, str] = {}

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _modules() -> list[Path]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT)
        parts = rel.parts[:-1] + ((rel.stem,) if rel.name != "__init__.py" else ())
        if any(p.startswith("_") for p in parts):
            continue
        if rel.as_posix() in SKIPPED_FILES:
            continue
        out.append(path)
    return out


def _top_level(body: list[ast.stmt]):
    """Definitions at the top of a module or class body, including those under ``if``/``try``."""
    for node in body:
        if isinstance(node, (*_FUNCS, ast.ClassDef)):
            yield node
        elif isinstance(node, ast.If):
            yield from _top_level(node.body)
            yield from _top_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from _top_level(block)


def _decorator_names(node) -> set[str]:
    names = set()
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if isinstance(target, ast.Attribute):
            names.add(target.attr)
        elif isinstance(target, ast.Name):
            names.add(target.id)
    return names


def _sections(doc: str) -> dict[str, list[str]]:
    """``{header: lines}`` for each underlined section of a docstring."""
    lines = doc.expandtabs().splitlines()
    heads = [
        i
        for i in range(len(lines) - 1)
        if lines[i].strip() and re.fullmatch(r"-{3,}", lines[i + 1].strip() or "x") is not None
    ]
    out = {}
    for k, i in enumerate(heads):
        end = heads[k + 1] if k + 1 < len(heads) else len(lines)
        out[lines[i].strip()] = lines[i + 2 : end]
    return out


def _names_in(section: list[str]) -> set[str]:
    """The names a Parameters/Attributes section documents: its least-indented entry lines."""
    entries = [ln for ln in section if ln.strip()]
    if not entries:
        return set()
    indent = min(len(ln) - len(ln.lstrip()) for ln in entries)
    names = set()
    for ln in entries:
        if len(ln) - len(ln.lstrip()) != indent:
            continue
        head = ln.strip().split(" : ")[0].rstrip(":")
        for name in head.split(","):
            names.add(name.strip().lstrip("*"))
    return names


def _params(fn) -> list[str]:
    a = fn.args
    names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    names += [p.arg for p in (a.vararg, a.kwarg) if p is not None]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return [n for n in names if not n.startswith("_")]


def _own_nodes(fn):
    """Nodes of a function's body, not descending into nested functions, classes or lambdas."""
    stack = list(fn.body)
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (*_FUNCS, ast.ClassDef, ast.Lambda)):
                stack.append(child)


def _is_none(node) -> bool:
    return node is None or (isinstance(node, ast.Constant) and node.value is None)


def _returns_value(fn) -> bool:
    ann = fn.returns
    if ann is not None and not _is_none(ann) and not (isinstance(ann, ast.Name) and ann.id == "NoReturn"):
        if not (isinstance(ann, ast.Constant) and ann.value in ("None", "NoReturn")):
            return True
    return any(isinstance(n, ast.Return) and not _is_none(n.value) for n in _own_nodes(fn))


def _is_generator(fn) -> bool:
    return any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in _own_nodes(fn))


def _check_function(fn, problems: list[str], where: str, *, method: bool) -> None:
    doc = ast.get_docstring(fn)
    if not doc:
        problems.append(f"{where}: no docstring")
        return
    if (method and "property" in _decorator_names(fn)) or _decorator_names(fn) & {"setter", "overload"}:
        return
    sections = _sections(doc)
    params = _params(fn)
    if params:
        if "Parameters" not in sections:
            problems.append(f"{where}: no Parameters section (takes {', '.join(params)})")
        else:
            missing = [p for p in params if p not in _names_in(sections["Parameters"])]
            if missing:
                problems.append(f"{where}: Parameters does not name {', '.join(missing)}")
    if _is_generator(fn):
        if "Yields" not in sections:
            problems.append(f"{where}: a generator without a Yields section")
    elif _returns_value(fn) and "Returns" not in sections:
        problems.append(f"{where}: returns a value but has no Returns section")


def _fields(cls: ast.ClassDef) -> list[str]:
    out = []
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            ann = ast.unparse(node.annotation)
            if "ClassVar" in ann or node.target.id.startswith("_"):
                continue
            out.append(node.target.id)
    return out


def _check_class(cls: ast.ClassDef, problems: list[str], where: str) -> None:
    doc = ast.get_docstring(cls)
    if not doc:
        problems.append(f"{where}: no docstring")
        return
    sections = _sections(doc)
    bases = {ast.unparse(b) for b in cls.bases}
    is_record = "dataclass" in _decorator_names(cls) or bases & {"NamedTuple", "typing.NamedTuple"}
    init = next((n for n in cls.body if isinstance(n, _FUNCS) and n.name == "__init__"), None)
    wanted = _params(init) if init is not None else (_fields(cls) if is_record else [])
    if wanted:
        documented = _names_in(sections.get("Parameters", [])) | _names_in(sections.get("Attributes", []))
        missing = [p for p in wanted if p not in documented]
        if missing:
            kind = "fields" if init is None else "constructor parameters"
            problems.append(f"{where}: Parameters/Attributes do not name the {kind} {', '.join(missing)}")


def _problems() -> tuple[list[str], int]:
    problems: list[str] = []
    count = 0
    for path in _modules():
        rel = path.relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in _top_level(tree.body):
            if node.name.startswith("_"):
                continue
            where = f"{rel}::{node.name}"
            count += 1
            found: list[str] = []
            if isinstance(node, ast.ClassDef):
                _check_class(node, found, where)
                for member in _top_level(node.body):
                    if isinstance(member, _FUNCS) and not member.name.startswith("_"):
                        count += 1
                        _check_function(member, found, f"{where}.{member.name}", method=True)
            else:
                _check_function(node, found, where, method=False)
            problems += [p for p in found if p.split(": ")[0] not in ALLOWED]
    return problems, count


def test_public_objects_have_numpydoc_sections():
    problems, count = _problems()
    assert count > 100, f"only {count} public objects found: is the walk broken?"
    assert not problems, f"{len(problems)} public objects lack numpydoc sections:\n" + "\n".join(problems)


def test_the_check_can_fail(tmp_path):
    src = '''
def f(a, b):
    """Sum.

    Parameters
    ----------
    a : int
        First.
    """
    return a + b
'''
    fn = ast.parse(src).body[0]
    found: list[str] = []
    _check_function(fn, found, "f", method=False)
    assert any("does not name b" in p for p in found) and any("Returns" in p for p in found)


def test_the_check_can_fail_on_records_and_generators():
    src = '''
@dataclass
class R:
    """A record.

    Attributes
    ----------
    a : int
        First.
    """

    a: int
    b: float = 0.0


def g(n):
    """Count.

    Parameters
    ----------
    n : int
        How far.

    Returns
    -------
    int
    """
    yield from range(n)
'''
    cls, gen = ast.parse(src).body
    found: list[str] = []
    _check_class(cls, found, "R")
    _check_function(gen, found, "g", method=False)
    assert any("fields b" in p for p in found) and any("Yields" in p for p in found)


def test_skip_and_allow_lists_name_existing_objects():
    for path in SKIPPED_FILES:
        assert (ROOT / path).is_file(), f"{path} is skipped but does not exist: drop the entry"
    for entry in ALLOWED:
        path, name = entry.split("::")
        assert (ROOT / path).is_file(), f"{entry}: no such file"
        assert re.search(rf"\b(def|class) {re.escape(name.split('.')[-1])}\b", (ROOT / path).read_text()), entry
