"""The package's layers: imports point down the data flow, and there are no import cycles.

Layers, lowest first (a module may import its own layer and any layer below it):

    errors, _lazy, _warnings, _version, types, progress  (leaves: import nothing of ddssp but each other)
    data, dp                        (reading data; DP primitives: import only the leaves)
    marginals                       (workloads, the junction-tree model, AIM and its JAX settings)
    releasefile                     (the release file: model, format, bounded reading, self-check, signing)
    pipeline, estimators            (making a release from data; DD-SSP and the other DP regressions)
    bench, evaluation               (the spec runner and experiment kinds; the data holder's quality report)
    commands, cli, __init__         (the CLI; the package's public names)

data and dp are independent of each other, and so are pipeline and estimators, and bench and
evaluation; the CLI modules (rank 6) may import each other. The walk reads every ``import``
statement of every module (including imports inside functions, which is how heavy modules are loaded
lazily), so a function-level upward import is a violation too. Cycles are checked on the same full walk: an import
inside a function that closes a circle still ties the modules together (neither can be read, moved or
tested without the other), even though Python resolves it lazily.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import networkx as nx
import pytest

PKG = Path(__file__).resolve().parents[1] / "ddssp"

RANK = {
    "errors": 0,
    "_lazy": 0,
    "_warnings": 0,
    "_version": 0,
    "types": 0,
    "progress": 0,
    "data": 1,
    "dp": 1,
    "marginals": 2,
    "releasefile": 3,
    "pipeline": 4,
    "estimators": 4,
    "bench": 5,
    "evaluation": 5,
    "commands": 6,
    "cli": 6,
    "__main__": 6,
    "__init__": 6,
}

#: layers of the same rank that must not import each other
INDEPENDENT = [{"data", "dp"}, {"pipeline", "estimators"}, {"bench", "evaluation"}]


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _layer(module: str) -> str:
    """'ddssp.data.schema' -> 'data'; 'ddssp' -> '__init__'."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path) -> list[tuple[str, bool]]:
    """(imported ddssp module, at module level?) for every import in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module = _module_name(path)
    top = set(map(id, tree.body))
    out = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import
                base = module.split(".")
                if path.name != "__init__.py":
                    base = base[:-1]
                base = base[: len(base) - (node.level - 1)]
                names = [".".join(base + ([node.module] if node.module else []))]
            elif node.module:
                names = [node.module]
            # ``from ddssp.x import y`` may name a submodule y
            names += [f"{names[0]}.{a.name}" for a in node.names] if names else []
        for n in names:
            if n == "ddssp" or n.startswith("ddssp."):
                out.append((n, id(node) in top))
    return out


def _package_modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PKG.rglob("*.py")}


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The module an imported dotted name refers to (a name inside a module resolves to it)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _edges(module_level_only: bool) -> list[tuple[str, str]]:
    modules = _package_modules()
    edges = []
    for mod, path in modules.items():
        for name, at_top in _imports(path):
            if module_level_only and not at_top:
                continue
            target = _resolve(name, modules)
            if target is not None and target != mod:
                edges.append((mod, target))
    return edges


def test_every_top_level_name_has_a_layer():
    names = {
        p.stem if p.is_file() else p.name
        for p in PKG.iterdir()
        if (p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists()))
    }
    missing = sorted(names - set(RANK))
    assert not missing, f"modules/packages without a layer in tests/test_layout.py: {missing}"


def test_imports_point_down():
    bad = []
    for src, dst in _edges(module_level_only=False):
        ls, ld = _layer(src), _layer(dst)
        if ls == ld:
            continue
        if RANK[ld] > RANK[ls] or {ls, ld} in INDEPENDENT:
            bad.append(f"{src} imports {dst} ({ls} -> {ld})")
    assert not bad, "upward or sideways imports:\n" + "\n".join(sorted(set(bad)))


#: known circles tolerated for now, each the set of modules on one circle, with a comment saying
#: why; empty: the full walk finds no circle in the package. An entry whose circle is gone fails
#: test_allowed_cycles_still_exist, so the list can only shrink.
ALLOWED_CYCLES: list[frozenset[str]] = []


def _cycles(module_level_only: bool) -> list[list[str]]:
    g = nx.DiGraph(_edges(module_level_only=module_level_only))
    return [c for c in nx.simple_cycles(g) if frozenset(c) not in ALLOWED_CYCLES]


def test_no_import_cycles():
    # every import counts, including those inside functions (lazy imports)
    cycles = _cycles(module_level_only=False)
    assert not cycles, f"import cycles: {cycles[:5]}"


def test_allowed_cycles_still_exist():
    """An allow-list entry whose circle is gone must be removed (the list only shrinks)."""
    g = nx.DiGraph(_edges(module_level_only=False))
    present = {frozenset(c) for c in nx.simple_cycles(g)}
    stale = [sorted(c) for c in ALLOWED_CYCLES if c not in present]
    assert not stale, f"allowed cycles that no longer exist (remove them from ALLOWED_CYCLES): {stale}"


#: Most modules directly under ddssp/ besides ``__init__`` and ``__main__``: a module that belongs to
#: one layer lives in that layer's folder, so the top level holds only what every layer shares.
MAX_TOP_LEVEL_MODULES = 7


def test_few_top_level_modules():
    top = sorted(p.stem for p in PKG.glob("*.py") if p.stem not in ("__init__", "__main__"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, (
        f"{len(top)} modules at the top of ddssp/ (at most {MAX_TOP_LEVEL_MODULES}): {top}"
    )


def test_the_top_level_count_can_fail(monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "MAX_TOP_LEVEL_MODULES", 1)
    with pytest.raises(AssertionError, match="modules at the top of ddssp/"):
        test_few_top_level_modules()


@pytest.mark.parametrize("low", ["data", "dp"])
def test_lowest_layers_import_nothing_above(low):
    for src, dst in _edges(module_level_only=False):
        if _layer(src) == low:
            assert _layer(dst) in (low, "errors", "_lazy", "_version", "types"), (src, dst)


def test_estimators_never_import_bench_or_commands():
    for src, dst in _edges(module_level_only=False):
        if _layer(src) == "estimators":
            assert _layer(dst) not in ("bench", "commands", "cli"), (src, dst)


def test_the_walk_sees_a_violation(tmp_path, monkeypatch):
    """The checker is not vacuous: an upward import planted in a copy of the tree is reported."""
    import shutil

    fake = tmp_path / "ddssp"
    shutil.copytree(PKG, fake, ignore=shutil.ignore_patterns("__pycache__"))
    (fake / "data" / "planted.py").write_text("def f():\n    from ddssp.bench import runner\n")
    (fake / "pipeline" / "planted.py").write_text("def f():\n    from ddssp.estimators import base\n")
    (fake / "dp" / "cyc_a.py").write_text("import ddssp.dp.cyc_b\n")
    (fake / "dp" / "cyc_b.py").write_text("import ddssp.dp.cyc_a\n")
    # a circle closed only by an import inside a function is found too
    (fake / "dp" / "lazy_a.py").write_text("import ddssp.dp.lazy_b\n")
    (fake / "dp" / "lazy_b.py").write_text("def f():\n    from ddssp.dp import lazy_a\n")
    monkeypatch.setattr(__import__(__name__, fromlist=["PKG"]), "PKG", fake)
    with pytest.raises(AssertionError, match="ddssp.data.planted imports ddssp.bench"):
        test_imports_point_down()
    with pytest.raises(AssertionError, match="ddssp.pipeline.planted imports ddssp.estimators"):
        test_imports_point_down()
    with pytest.raises(AssertionError, match="cycles") as err:
        test_no_import_cycles()
    assert "cyc_a" in str(err.value) and "lazy_a" in str(err.value)


#: Most lines of code (docstrings, comments and blank lines not counted) one module may hold: one idea
#: per module. Reference docstrings (numpydoc sections) are not held against a module.
MAX_CODE_LINES = 600


def code_lines(src: str) -> int:
    """Lines of ``src`` that are code: not blank, not a comment, not inside a docstring."""
    tree = ast.parse(src)
    doc: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            first = body[0] if body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                doc.update(range(first.lineno, first.end_lineno + 1))
    return sum(
        1
        for i, line in enumerate(src.splitlines(), 1)
        if i not in doc and line.strip() and not line.strip().startswith("#")
    )


def test_code_lines_counts_code_only():
    src = '"""Module.\n\nMore."""\n\n# a comment\nx = 1\n\n\ndef f():\n    """Doc."""\n    return x\n'
    assert code_lines(src) == 3


def test_no_module_over_the_code_line_limit():
    big = {
        str(p.relative_to(PKG.parent)): n
        for p in sorted(PKG.rglob("*.py"))
        if (n := code_lines(p.read_text())) > MAX_CODE_LINES
    }
    assert not big, f"modules over {MAX_CODE_LINES} lines of code: {big}"


#: Most lines in all (docstrings included) one module may hold.
MAX_LINES = 700


def test_no_module_over_the_line_limit():
    big = {
        str(p.relative_to(PKG.parent)): n
        for p in sorted(PKG.rglob("*.py"))
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert not big, f"modules over {MAX_LINES} lines: {big}"


def test_the_line_limits_can_fail(monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "MAX_LINES", 100)
    with pytest.raises(AssertionError, match="modules over 100 lines"):
        test_no_module_over_the_line_limit()
    monkeypatch.setattr(sys.modules[__name__], "MAX_CODE_LINES", 100)
    with pytest.raises(AssertionError, match="modules over 100 lines of code"):
        test_no_module_over_the_code_line_limit()


#: Most private names (a leading underscore) one ddssp module may import from another, over the whole
#: package: a helper that siblings need is a public name of its module (or of a small module of its own)
MAX_PRIVATE_IMPORTS = 20


def private_imports(pkg: Path) -> list[str]:
    """``module imports name from other`` for every private name imported from another ddssp module
    (``from ddssp.x import _name``, or a relative ``from .x import _name``)."""
    out = []
    for path in sorted(pkg.rglob("*.py")):
        rel = path.relative_to(pkg.parent).with_suffix("")
        parts = list(rel.parts[:-1]) if rel.name == "__init__" else list(rel.parts)
        module = ".".join(parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                source = "." * node.level + (node.module or "")
            elif node.module and (node.module == "ddssp" or node.module.startswith("ddssp.")):
                if node.module == module:
                    continue
                source = node.module
            else:
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    out.append(f"{module} imports {alias.name} from {source}")
    return out


def test_few_private_names_are_imported_across_modules():
    found = private_imports(PKG)
    assert len(found) < MAX_PRIVATE_IMPORTS, (
        f"{len(found)} private names imported across modules (at most {MAX_PRIVATE_IMPORTS - 1}); make the "
        "helpers that siblings need public names of their module:\n  " + "\n  ".join(found)
    )


def test_private_imports_are_found(tmp_path):
    """The count is not vacuous: planted private imports are found, a module's own names and
    dunders are not."""
    pkg = tmp_path / "ddssp"
    (pkg / "x").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "x" / "__init__.py").write_text("from ddssp.x import _own\n")
    (pkg / "x" / "a.py").write_text("from ddssp.x.b import _helper, public, __version__\nfrom .b import _rel\n")
    (pkg / "x" / "b.py").write_text("def f():\n    from ddssp.x.a import _lazy\n")
    assert private_imports(pkg) == [
        "ddssp.x.a imports _helper from ddssp.x.b",
        "ddssp.x.a imports _rel from .b",
        "ddssp.x.b imports _lazy from ddssp.x.a",
    ]
