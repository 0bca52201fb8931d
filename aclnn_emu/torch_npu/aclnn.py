"""Calling an aclnn entry point the way torch_npu's EXEC_NPU_CMD does: the arguments by position in the
header's order (outputs last, allocated by the caller), through `aclnn_emu.ops`; a failed call raises
the RuntimeError torch_npu raises, carrying the status and aclGetRecentErrMsg's text.

INTERIM holds, per entry point this build does not have yet, the one it can run instead with the
same meaning (V1 is V2 with its added parameters at their V1 values), or nothing: then the call
raises NotImplementedError naming the entry point. An entry point found in aclnn_emu.ops always wins.
"""

from aclnn_emu import config, ops
from aclnn_emu.errors import AclnnError

ARCH35 = "Ascend910_95"


def _v1_as_v2(prefix_at: int, sparse_at: int):
    """V1's arguments as V2's: qStartIdx/kvStartIdx (NULL) after prefix, pseType 1 after sparseMode."""

    def convert(args):
        return (*args[: prefix_at + 1], None, None, *args[prefix_at + 1 : sparse_at + 1], 1, *args[sparse_at + 1 :])

    return convert


INTERIM = {
    "FlashAttentionScore": ("FlashAttentionScoreV2", _v1_as_v2(7, 15)),
    "FlashAttentionScoreGrad": ("FlashAttentionScoreGradV2", _v1_as_v2(12, 20)),
}


def soc() -> str:
    return config.current.soc


def _function(entry: str, args: tuple):
    fn = getattr(ops, entry, None)
    if fn is not None:
        return entry, fn, args
    if entry in INTERIM:
        other, convert = INTERIM[entry]
        converted = convert(args)
        if converted is not None:
            return other, getattr(ops, other), converted
    raise NotImplementedError(f"aclnn{entry} (what torch_npu calls here) is not emulated by this build of aclnn-emu")


def call(entry: str, *args):
    """Both phases of aclnn<entry> with these arguments; outputs given as CPU tensors are filled in place."""
    name, fn, args = _function(entry, args)
    try:
        return fn(*args)
    except AclnnError as error:
        raise RuntimeError(f"call aclnn{name} failed, error code is {error.status}\n{error}") from None


def workspace_size(entry: str, *args) -> int:
    """Phase 1 only: the workspace aclnn<entry> asks for with these arguments."""
    name, fn, args = _function(entry, args)
    try:
        with fn.prepare(*args) as prepared:
            return prepared.workspace_size
    except AclnnError as error:
        raise RuntimeError(f"call aclnn{name}GetWorkspaceSize failed, error code is {error.status}\n{error}") from None


def check(condition: bool, *message) -> None:
    """TORCH_CHECK: a RuntimeError with the message's parts joined."""
    if not condition:
        raise RuntimeError("".join(str(part) for part in message))
