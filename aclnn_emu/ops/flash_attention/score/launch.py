"""aclnnFlashAttentionScoreV2: the launch, layouts from the device tensors to the kernel and back, and the
workspace."""

from aclnn_emu.dtypes import DataType
from aclnn_emu.kernels.flash_attention.flash_attention_score import flash_attention_score
from ..common import score_params
from aclnn_emu.kernels.flash_attention.varlen import var_len_score
from .shapes import _Axes, _present


# -- launch ---------------------------------------------------------------------------------------
def _zero_outputs(a):
    def run(workspace):
        for out in (a.softmaxMaxOut, a.softmaxSumOut, a.attentionOutOut):
            if not out.is_empty:
                out.write(0)

    return run


def _launch(a, x: _Axes, mode, invalid_line, generated_dropout, starts, arch35, sink=None):
    params = score_params(
        a,
        x.layout,
        mode,
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
            sink=None if sink is None else sink.read(),
        )
        if not in_place:
            for tensor, values in zip(results, computed):
                tensor.write(values)

    return run


def _launch_tnd(a, batches, mode, invalid_line, sink, softmax_layout, arch35, pse_form, generated_dropout, starts):
    """The variable-length entry points: each packed batch a dense attention (kernels/flash_attention/varlen.py),
    softmaxMax/Sum in `softmax_layout`, the pse read per batch as `pse_form` (varlen_pse.PackedPse) says;
    `generated_dropout` the (seed, offset) of a keep mask the kernel draws itself; `starts` the
    (qStartIdx, kvStartIdx) the generated ALiBi reads."""
    params = score_params(
        a,
        "TND",
        mode,
        q_start_idx=starts[0],
        kv_start_idx=starts[1],
        invalid_line=invalid_line,
        generated_dropout=generated_dropout,
        saturate=arch35,
    )
    drop, mask = (_present(t) for t in (a.dropMaskOptional, a.attenMaskOptional))
    pse = None if pse_form is None else a.realShiftOptional
    ropes = [getattr(a, name, None) for name in ("queryRope", "keyRope")]

    def run(workspace):
        computed = var_len_score(
            a.query.read(),
            a.key.read(),
            a.value.read(),
            params,
            batches.cu_q,
            batches.cu_kv,
            atten_mask=None if mask is None else mask.read(),
            drop_mask=None if drop is None else drop.read(),
            sink=None if sink is None else sink.read(),
            rope=None if None in ropes else tuple(t.read() for t in ropes),
            softmax_layout=softmax_layout,
            pse=None if pse is None else list(pse_form.batches(pse.read(), batches.q, batches.kv)),
            mask_row_stride=arch35,
        )
        for tensor, values in zip((a.softmaxMaxOut, a.softmaxSumOut, a.attentionOutOut), computed):
            tensor.write(values)

    return run
