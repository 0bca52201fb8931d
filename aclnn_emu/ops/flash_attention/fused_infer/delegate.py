"""The routes FusedInferAttentionScore shares with IncreFlashAttention and PromptFlashAttention.

A2/A3: `TilingProcess4IFA` (IFATiling::DoSubOpTiling) and `TilingProcess4PFA` (the PFA tiling);
Ascend910_95: IFATilingV2 for an antiquant key, PromptFlashAttentionTilingV2 for the rest. The
emulator runs those operators' prepare (their public `OP`) on the FIA call's arguments renamed to
theirs; what they reject is a tiling failure of FIA (561002). Inputs their V4/V2 entry points
cannot take are declared below.
"""

from types import SimpleNamespace

from aclnn_emu import status
from aclnn_emu.opdef.gaps import KINDS, Gaps
from aclnn_emu.opdef.signature import OpError

from ..incre import OP as INCRE
from ..prompt import OP as PROMPT
from .entry import V4

NOT_IMPLEMENTED = Gaps(
    V4,
    "not_implemented",
    {
        "lse": "softmaxLse on a call the A2/A3 tiling sends to the IFA or PFA kernels, or on Ascend910_95",
        "query_padding": "queryPaddingSize on a call the tiling sends to the PFA kernels",
        "kv_antiquant": "separate key/value antiquant parameters or modes on the IFA/PFA routes",
        "shared_prefix": "a shared prefix on the IFA/PFA routes",
        "rope": "queryRope/keyRope on the IFA/PFA routes (MLA decode through the IFA kernels)",
        "query_quant": "dequantScaleQuery (query quantisation)",
        "sink": "learnableSink on the IFA/PFA routes",
        "int4": "an INT4 (INT32) key/value",
        "pse_pfa": "pseShift on a call the A2/A3 tiling sends to the PFA kernels",
    },
)


def _refuse_unsupported(a, prompt: bool):
    """The FIA inputs the IFA V4 / PFA V2 preparations cannot take."""
    if a.lse_wanted:
        NOT_IMPLEMENTED.refuse("lse")
    separate = (
        a.keyAntiquantScaleOptional, a.keyAntiquantOffsetOptional, a.valueAntiquantScaleOptional,
        a.valueAntiquantOffsetOptional,
    )  # fmt: skip
    if any(x is not None for x in separate) or a.keyAntiquantMode or a.valueAntiquantMode:
        NOT_IMPLEMENTED.refuse("kv_antiquant")
    if a.keySharedPrefixOptional is not None or a.valueSharedPrefixOptional is not None:
        NOT_IMPLEMENTED.refuse("shared_prefix")
    if a.queryRopeOptional is not None or a.keyRopeOptional is not None:
        NOT_IMPLEMENTED.refuse("rope")
    if a.dequantScaleQueryOptional is not None:
        NOT_IMPLEMENTED.refuse("query_quant")
    if a.learnableSinkOptional is not None:
        NOT_IMPLEMENTED.refuse("sink")
    if a.int4:
        NOT_IMPLEMENTED.refuse("int4")
    if prompt and a.queryPaddingSizeOptional is not None:
        NOT_IMPLEMENTED.refuse("query_padding")
    if prompt and a.pseShiftOptional is not None:
        NOT_IMPLEMENTED.refuse("pse_pfa")


def _as_tiling_failure(op, prepare, args, env):
    """The other operator's prepare; its refusals are FIA tiling failures (561002), the emulator's
    own gaps (declared with their code) keep it."""
    try:
        return prepare(args, env)
    except OpError as exc:
        if exc.code == status.ACLNN_ERR_INNER_TILING_ERROR or exc.rule.split(".")[0] in KINDS:
            raise
        raise OpError(
            status.ACLNN_ERR_INNER_TILING_ERROR,
            f"FusedInferAttentionScore tiling failed ({op.name} route): {exc.message}",
            rule=f"tiling.{op.name}.{exc.rule}",
        ) from None


def incre(a, env):
    """The IFA route: IncreFlashAttentionV4's arguments (actualSeqLengths are the key lengths)."""
    _refuse_unsupported(a, prompt=False)
    args = SimpleNamespace(
        query=a.query,
        key=a.key,
        value=a.value,
        pseShift=a.pseShiftOptional,
        attenMask=a.attenMaskOptional,
        actualSeqLengths=a.actualSeqLengthsKvOptional,
        dequantScale1=a.deqScale1Optional,
        quantScale1=a.quantScale1Optional,
        dequantScale2=a.deqScale2Optional,
        quantScale2=a.quantScale2Optional,
        quantOffset2=a.quantOffset2Optional,
        antiquantScale=a.antiquantScaleOptional,
        antiquantOffset=a.antiquantOffsetOptional,
        blocktable=a.blockTableOptional,
        kvPaddingSize=a.kvPaddingSizeOptional,
        numHeads=a.numHeads,
        scaleValue=a.scaleValue,
        inputLayout=a.inputLayout,
        numKeyValueHeads=a.numKeyValueHeads,
        blockSize=a.blockSize,
        innerPrecise=a.innerPrecise,
        attentionOut=a.attentionOut,
    )
    return _as_tiling_failure(INCRE, INCRE.prepare_fn, args, env)


def prompt(a, env):
    """The PFA route: PromptFlashAttentionV2's arguments with the key/value lists' one tensor."""
    _refuse_unsupported(a, prompt=True)
    args = SimpleNamespace(
        query=a.query,
        key=a.key.items[0],
        value=a.value.items[0],
        pseShift=None,
        attenMask=a.attenMaskOptional,
        actualSeqLengths=a.actualSeqLengthsOptional,
        actualSeqLengthsKv=a.actualSeqLengthsKvOptional,
        deqScale1=a.deqScale1Optional,
        quantScale1=a.quantScale1Optional,
        deqScale2=a.deqScale2Optional,
        quantScale2=a.quantScale2Optional,
        quantOffset2=a.quantOffset2Optional,
        numHeads=a.numHeads,
        scaleValue=a.scaleValue,
        preTokens=a.preTokens,
        nextTokens=a.nextTokens,
        inputLayout=a.inputLayout,
        numKeyValueHeads=a.numKeyValueHeads,
        sparseMode=a.sparseMode,
        attentionOut=a.attentionOut,
    )
    return _as_tiling_failure(PROMPT, PROMPT.prepare_fn, args, env)
