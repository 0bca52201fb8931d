"""Every 561003 the emulator chooses, and every inferred rule, is declared once (aclnn_emu/opdef/gaps.py)
and listed by `aclnn-emu coverage`: the op modules raise them only by declared key."""

import ast
import importlib
import pathlib

import pytest

import aclnn_emu.ops as ops_pkg
from aclnn_emu import cli, status
from aclnn_emu.opdef import gaps
from aclnn_emu.opdef.registry import all_ops
from aclnn_emu.opdef.signature import OpError

OPS = pathlib.Path(ops_pkg.__file__).parent
# The shared pieces that raise 561003 for the source's own reasons (kernel lookup, unknown chip,
# an op with no prepare function) or that implement the declarations themselves.
SHARED = {"gaps.py", "generated.py", "calls.py", "signature.py"}


def _modules():
    for path in sorted(OPS.rglob("*.py")):
        if path.name not in SHARED:
            yield path, ast.parse(path.read_text())


def _module_name(path: pathlib.Path) -> str:
    return "aclnn_emu.ops." + ".".join(path.relative_to(OPS).with_suffix("").parts)


def test_no_undeclared_find_kernel_error_or_inferred_rule():
    offenders = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "ACLNN_ERR_INNER_FIND_KERNEL_ERROR":
                offenders.append(f"{path.name}:{node.lineno} uses 561003 directly")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "inferred":
                offenders.append(f"{path.name}:{node.lineno} calls env.inferred directly")
    assert not offenders, "declare these in a gaps.Gaps and raise by key:\n" + "\n".join(offenders)


def test_every_raised_key_is_declared():
    calls = 0
    for path, tree in _modules():
        module = importlib.import_module(_module_name(path))
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("refuse", "warn")
                and isinstance(node.func.value, ast.Name)
            ):
                continue
            declared = getattr(module, node.func.value.id, None)
            if not isinstance(declared, gaps.Gaps):
                continue
            key = node.args[0 if node.func.attr == "refuse" else 1]
            assert isinstance(key, ast.Constant), f"{path.name}:{node.lineno}: raise by a literal key"
            assert key.value in declared, f"{path.name}:{node.lineno}: {key.value!r} is not declared"
            assert node.func.attr == ("warn" if declared.kind == "inferred" else "refuse"), f"{path.name}:{node.lineno}"
            calls += 1
    assert calls >= 10


def test_coverage_lists_every_declaration():
    table = cli.coverage_table()
    for kind, rows in gaps.declared(all_ops()).items():
        assert (f"## {gaps.KINDS[kind]}" in table) == bool(rows)  # a kind without rows has no heading
        for op, _, key, text in rows:
            assert f"`{op.phase1}`" in table and f"{text} (rule `{kind}.{key}`)" in table


def test_refuse_raises_the_declared_code_and_rule():
    op = all_ops()[0]
    declared = gaps.Gaps(op.name + "Test", "refused", {"x": "a thing"}, code=status.ACLNN_ERR_PARAM_NULLPTR)
    with pytest.raises(OpError) as err:
        declared.refuse("x", "detail")
    assert (err.value.code, err.value.rule) == (status.ACLNN_ERR_PARAM_NULLPTR, "refused.x")
    assert "a thing (detail)" in err.value.message
    with pytest.raises(KeyError):
        declared.refuse("y")
    with pytest.raises(TypeError):
        declared.warn(None, "x")
