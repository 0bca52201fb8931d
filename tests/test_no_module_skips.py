"""No test module may skip as a whole: a module-level importorskip or skip hides every test in
the file (once, ~50 golden tests that need no PyTorch were skipped with it). Skips belong to the
tests that need what is missing."""

import ast
import pathlib

TESTS = pathlib.Path(__file__).resolve().parent


BLOCKS = ("body", "orelse", "finalbody", "handlers")


def _module_level(tree):
    """Statements that run at import: the module body, descending into if/try/with/for, not into
    functions or classes (a decorator's skip mark is per test)."""
    todo = list(tree.body)
    while todo:
        node = todo.pop(0)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield node
        for field in BLOCKS:
            todo.extend(getattr(node, field, []))


def _own_expressions(node):
    """The expressions of a statement itself, not of the statements in its blocks."""
    for field, value in ast.iter_fields(node):
        if field in BLOCKS:
            continue
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, ast.AST):
                yield from ast.walk(child)


def _skips(node):
    """What in one module-level statement skips the module."""
    found = []
    for call in (n for n in _own_expressions(node) if isinstance(n, ast.Call)):
        name = ast.unparse(call.func)
        if name.endswith("importorskip"):
            found.append(name)
        if name.endswith("skip") and any(k.arg == "allow_module_level" for k in call.keywords):
            found.append(f"{name}(allow_module_level=...)")
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in targets):
            text = ast.unparse(node.value)
            if "skip" in text or "xfail" in text:
                found.append(f"pytestmark = {text}")
    return found


def offenders(root=TESTS):
    out = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in _module_level(tree):
            out += [f"{path.relative_to(root)}:{node.lineno}: {what}" for what in _skips(node)]
    return out


def test_no_module_level_skips():
    assert offenders() == []


def test_the_scan_finds_each_kind(tmp_path):
    (tmp_path / "test_a.py").write_text('import pytest\ntorch = pytest.importorskip("torch")\n')
    (tmp_path / "test_b.py").write_text('import pytest\nif True:\n    pytest.skip("no", allow_module_level=True)\n')
    (tmp_path / "test_c.py").write_text('import pytest\npytestmark = [pytest.mark.skipif(True, reason="x")]\n')
    (tmp_path / "test_d.py").write_text('import pytest\ndef test_x():\n    pytest.importorskip("torch")\n')
    assert [line.split(":")[0] for line in offenders(tmp_path)] == ["test_a.py", "test_b.py", "test_c.py"]
