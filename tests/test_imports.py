"""The import graph of aclnn_emu has no cycle (lazy imports inside functions count), and no operator
package imports another operator's private (`_`-prefixed) names: what operators share lives in
their family's common module (docs/design/checklist.md)."""

import ast
import pathlib

import aclnn_emu

ROOT = pathlib.Path(aclnn_emu.__file__).parent
OPS = ROOT / "ops"


def _module(path: pathlib.Path) -> str:
    parts = ("aclnn_emu",) + path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in ROOT.rglob("*.py")}


def _imports(name: str, path: pathlib.Path):
    """(imported module, imported names, line) for every import in the file, at any depth."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, (), node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in MODULES:
                    yield sub, (), node.lineno
                else:
                    yield base, (alias.name,), node.lineno


def _graph() -> dict[str, set[str]]:
    return {
        name: {target for target, _, _ in _imports(name, path) if target in MODULES and target != name}
        for name, path in MODULES.items()
    }


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _operator(module: str) -> str | None:
    """aclnn_emu.ops.<family>.<operator> for a module inside an operator package, else None."""
    parts = module.split(".")
    if parts[:2] != ["aclnn_emu", "ops"] or len(parts) < 4:
        return None
    package = ".".join(parts[:4])
    return package if (OPS / parts[2] / parts[3]).is_dir() else None


def test_no_import_cycle():
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_one():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_private_name_crosses_an_operator_package():
    offenders = []
    for name, path in MODULES.items():
        for target, names, line in _imports(name, path):
            private = [n for n in names if n.startswith("_")]
            if private and _operator(target) != _operator(name) and target.startswith("aclnn_emu.ops"):
                offenders.append(f"{path.relative_to(ROOT)}:{line} imports {', '.join(private)} from {target}")
    assert offenders == []


def test_every_operator_package_is_registered():
    from aclnn_emu.opdef.registry import PACKAGES

    found = {str(p.parent.relative_to(OPS)).replace("/", ".") for p in OPS.glob("*/*/entry.py")}
    assert found == set(PACKAGES)
