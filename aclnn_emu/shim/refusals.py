"""The C++ source of every declared runtime function the emulator does not implement.

Each is defined with the exact declaration of our headers (the translation unit includes them, so a
definition that disagrees with its declaration does not compile) and asks the Python side for the
refusal (aclemu_refuse, defined beside the bound wrappers): the status code for aclError functions,
0 or NULL for the rest, after the failure has been recorded."""

from ..capi.declarations import Declaration

HEADER = """#include "acl/acl.h"
extern "C" int aclemu_refuse(const char *name);
"""


def definition(d: Declaration) -> str:
    call = f'aclemu_refuse("{d.name}")'
    body = f"return ({d.ret}){call};" if d.returns_status else f"(void){call}; return ({d.ret})0;"
    return f'extern "C" {d.ret} {d.name}({d.params}) {{ {body} }}'


def source(refused: list[Declaration]) -> str:
    return HEADER + "\n".join(definition(d) for d in refused) + "\n"
