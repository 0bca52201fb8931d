"""The headers under include/ agree with the declarations the shim is generated from."""

import re
import subprocess

import pytest

from aclnn_emu import dtypes, formats, status, toolkit
from aclnn_emu.capi.prototypes import runtime_prototypes
from aclnn_emu.opdef.registry import all_ops

INCLUDE = toolkit.HOME / "include"


def compile_cpp(tmp_path, source: str) -> subprocess.CompletedProcess:
    path = tmp_path / "check.cpp"
    path.write_text(source)
    return subprocess.run(
        [
            "g++",
            "-std=c++11",
            "-Wall",
            "-Werror",
            "-fsyntax-only",
            f"-I{INCLUDE}",
            f"-I{INCLUDE / 'aclnn'}",
            f"-I{INCLUDE / 'aclnnop'}",
            str(path),
        ],
        capture_output=True,
        text=True,
    )


def test_runtime_and_meta_headers_match_the_shim_prototypes(tmp_path):
    # Redeclaring a C function with different parameter types is an error, so this compiles only
    # when every line of capi/prototypes.py is exactly what the headers declare.
    decls = "\n".join(p.line for p in runtime_prototypes())
    result = compile_cpp(
        tmp_path,
        f'#include "acl/acl.h"\n#include "aclnn/aclnn_base.h"\n'
        f'extern "C" {{\n{decls}\n}}\nint main() {{ return 0; }}\n',
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("op", all_ops(), ids=lambda op: op.name)
def test_operator_header_matches_its_signature(tmp_path, op):
    declared = compile_cpp(
        tmp_path,
        f'#include "aclnnop/{op.header}"\n'
        f"int main() {{ auto a = &{op.phase1}; auto b = &{op.phase2}; "
        f"return (a != nullptr) + (b != nullptr) - 2; }}\n",
    )
    assert declared.returncode == 0, declared.stderr
    decls = "\n".join(op.c_prototypes())
    same = compile_cpp(
        tmp_path, f'#include "aclnnop/{op.header}"\nextern "C" {{\n{decls}\n}}\nint main() {{ return 0; }}\n'
    )
    assert same.returncode == 0, same.stderr


def test_status_values_agree_with_headers():
    text = (
        (INCLUDE / "aclnn/opdev/op_errno.h").read_text()
        + (INCLUDE / "acl/acl_base_rt.h").read_text()
        + (INCLUDE / "acl/error_codes/rt_error_codes.h").read_text()
    )
    declared = {m[0]: int(m[1]) for m in re.findall(r"(ACL\w+)(?: =|) (\d+)", text)}
    for name, value in vars(status).items():
        if name.startswith(("ACL_", "ACLNN_")) and isinstance(value, int):
            assert declared.get(name) == value, name


def test_enum_values_agree_with_headers():
    text = (INCLUDE / "acl/acl_base_rt.h").read_text()
    declared = {m[0]: int(m[1]) for m in re.findall(r"(ACL_\w+) = (-?\d+)", text)}
    for enum in (dtypes.DataType, formats.Format):
        for member in enum:
            assert declared[member.name] == member.value, member.name


def test_sample_type_constraints_compile(tmp_path):
    # reference acl-abi.md §1.1: handles are void*, aclFloat16 is uint16_t, enums usable qualified and not
    source = """#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include <vector>
#include <type_traits>
static_assert(std::is_same<aclFloat16, uint16_t>::value, "aclFloat16 must be uint16_t");
static_assert(std::is_same<aclrtStream, void *>::value, "aclrtStream must be void*");
int main() {
    aclrtContext ctx = nullptr;
    aclrtStream stream = nullptr;
    (void)aclrtDestroyContext(&ctx);      // the LightningIndexerGrad sample passes &context
    (void)aclrtDestroyStream(&stream);
    std::vector<aclFloat16> v(4, 1.0);
    aclDataType a = aclDataType::ACL_FLOAT16, b = ACL_BF16;
    aclFormat f = aclFormat::ACL_FORMAT_ND;
    return static_cast<int>(a) + static_cast<int>(b) + static_cast<int>(f) + v[0] + OK;
}
"""
    result = compile_cpp(tmp_path, source)
    assert result.returncode == 0, result.stderr


def test_coverage_table_is_current():
    from aclnn_emu.cli import coverage_table

    assert (toolkit.HOME.parent.parent / "docs" / "coverage.md").read_text() == coverage_table(), (
        "docs/coverage.md is stale: run `aclnn-emu coverage > docs/coverage.md`"
    )
