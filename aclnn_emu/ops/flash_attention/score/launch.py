"""aclnnFlashAttentionScoreV2: the launch, layouts from the device tensors to the kernel and back, and the
workspace."""

import numpy as np
from aclnn_emu.dtypes import DataType
from aclnn_emu.kernels.flash_attention.flash_attention_score import flash_attention_score
from aclnn_emu.kernels.flash_attention.params import FaParams
from .shapes import _Axes, _present


# -- launch ---------------------------------------------------------------------------------------
def _zero_outputs(a):
    def run(workspace):
        for out in (a.softmaxMaxOut, a.softmaxSumOut, a.attentionOutOut):
            if not out.is_empty:
                out.write(0)

    return run


def _launch(a, x: _Axes, mode, invalid_line, generated_dropout, starts, arch35):
    params = FaParams(
        scale=a.scaleValue,
        keep_prob=float(np.float32(a.keepProb)),
        head_num=a.headNum,
        layout=x.layout,
        pre_tokens=a.preTokens,
        next_tokens=a.nextTokens,
        sparse_mode=mode,
        pse_type=a.pseType,
        prefix=a.prefixOptional,
        q_start_idx=starts[0],
        kv_start_idx=starts[1],
        invalid_line=invalid_line,
        generated_dropout=generated_dropout,
        saturate=arch35,
    )
    pse, drop, mask = (_present(t) for t in (a.realShiftOptional, a.dropMaskOptional, a.attenMaskOptional))

    results = (a.softmaxMaxOut, a.softmaxSumOut, a.attentionOutOut)
    in_place = all(t.dtype == want for t, want in zip(results, (DataType.ACL_FLOAT, DataType.ACL_FLOAT, a.query.dtype)))

    def run(workspace):
        outputs = tuple(t.view() for t in results) if in_place else None  # else computed, then cast
        computed = flash_attention_score(
            a.query.read(),
            a.key.read(),
            a.value.read(),
            params,
            pse=None if pse is None else pse.read(),
            drop_mask=None if drop is None else drop.read(),
            atten_mask=None if mask is None else mask.read(),
            outputs=outputs,
        )
        if not in_place:
            for tensor, values in zip(results, computed):
                tensor.write(values)

    return run
