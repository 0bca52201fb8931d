"""Calling an aclnn entry point the way torch_npu's EXEC_NPU_CMD does: the arguments by position in the
header's order (outputs last, allocated by the caller), through `aclnn_emu.ops`; a failed call raises
the RuntimeError torch_npu raises, carrying the status and aclGetRecentErrMsg's text. An entry point
aclnn_emu.ops does not have raises NotImplementedError naming it.
"""

from aclnn_emu import config, ops, platform
from aclnn_emu.errors import AclnnError

ARCH35 = "Ascend910_95"


def soc() -> str:
    """The emulated chip family (ACLNN_EMU_SOC names a part of it)."""
    return platform.part(config.current.soc).family


def _function(entry: str):
    fn = getattr(ops, entry, None)
    if fn is None:
        raise NotImplementedError(
            f"aclnn{entry} (what torch_npu calls here) is not emulated by this build of aclnn-emu"
        )
    return fn


def call(entry: str, *args):
    """Both phases of aclnn<entry> with these arguments; outputs given as CPU tensors are filled in place."""
    fn = _function(entry)
    try:
        return fn(*args)
    except AclnnError as error:
        raise RuntimeError(f"call aclnn{entry} failed, error code is {error.status}\n{error}") from None


def max_workspace_size(entry: str, *args) -> int:
    """EXEC_GET_MAX_WORKSPACE_CMD: the workspace aclnn<entry>GetMaxWorkspaceSize returns for these
    arguments, its executor destroyed."""
    fn = _function(entry)
    try:
        with fn.get_max_workspace_size(*args) as prepared:
            return prepared.workspace_size
    except AclnnError as error:
        raise RuntimeError(f"call aclnn{entry} failed, error code is {error.status}\n{error}") from None


def check(condition: bool, *message) -> None:
    """TORCH_CHECK: a RuntimeError with the message's parts joined."""
    if not condition:
        raise RuntimeError("".join(str(part) for part in message))
