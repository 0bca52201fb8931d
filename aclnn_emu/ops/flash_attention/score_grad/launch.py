"""aclnnFlashAttentionScoreGradV2: the launch, layouts from the device tensors to the kernel and back, and the
workspace."""

from aclnn_emu.kernels.flash_attention.dropout import packed_keep_mask
from aclnn_emu.kernels.flash_attention.flash_attention_score_grad import flash_attention_score_grad, sink_gradient
from ..common import score_params
from aclnn_emu.kernels.flash_attention.varlen import var_len_score_grad
from .common import COMPRESSED_MASK, _present, seeds
from .entry import ARCH35


def _zero_outputs(a):
    def run(workspace):
        for out in (a.dqOut, a.dkOut, a.dvOut, a.dpseOut):
            if out is not None and not out.is_empty:
                out.write(0)

    return run


def _mask_window(mask, s, mode):
    """The mask as the kernel reads it: ARCH35 may be given a larger uncompressed mask, read from its top-left."""
    if mode in COMPRESSED_MASK or tuple(mask.shape[-2:]) == (s.s1, s.s2):
        return mask
    return mask[..., : s.s1, : s.s2]


def _kernel_layout(s, env) -> str:
    """ARCH35 GetShapeAttrsInfo compares the layout case-sensitively and reads any other 4-letter one
    (bsnd, bNsD, ...: the infershape passes them) as BSND, as the op_api's GetInputShapeInfo does."""
    if env.soc == ARCH35 and len(s.layout) == 4 and s.layout != "BNSD":
        return "BSND"
    return s.layout


def _start_indices(a, env) -> dict:
    """The ALiBi start positions as the kernel's pse reads them. Atlas A2/A3: both or neither apply
    (kernels/flash_attention/pse.py). ARCH35 SetQKVStartIdx (..._regbase.cpp) reads element 0 of
    qStartIdx alone, 0 for the other, and kvStartIdx only after a qStartIdx: a lone qStartIdx applies,
    a lone kvStartIdx does not (the forward's arch35 tiling applies either alone)."""
    q, kv = a.qStartIdxOptional, a.kvStartIdxOptional
    if env.soc == ARCH35 and q:
        q, kv = tuple(q[:1]), tuple(kv[:1]) if kv else (0,)
    return {"q_start_idx": q, "kv_start_idx": kv}


def _write_dsink(a, dsink):
    """dsinkOut, when the caller passed one (a sink without it has nowhere to go)."""
    out = getattr(a, "dsinkOut", None)
    if out is not None:
        out.write(dsink)


def _launch(a, s, mode, env, sink=None):
    params = score_params(a, _kernel_layout(s, env), mode, **_start_indices(a, env))
    pse, drop, mask = (_present(t) for t in (a.pseShiftOptional, a.dropMaskOptional, a.attenMaskOptional))
    generate = env.soc == ARCH35 and drop is None and params.keep_prob < 1

    def run(workspace):
        drop_mask = (
            packed_keep_mask(*seeds(a), s.b * s.n1 * s.s1, s.s2, params.keep_prob)
            if generate
            else None
            if drop is None
            else drop.read()
        )
        grads = flash_attention_score_grad(
            a.query.read(),
            a.keyIn.read(),
            a.value.read(),
            a.dy.read(),
            a.attentionInOptional.read(),
            a.softmaxMaxOptional.read(),
            a.softmaxSumOptional.read(),
            params,
            pse=None if pse is None else pse.read(),
            drop_mask=drop_mask,
            atten_mask=None if mask is None else _mask_window(mask.read(), s, mode),
            sink=None if sink is None else sink.read(),
        )
        for out, values in zip((a.dqOut, a.dkOut, a.dvOut), grads):
            out.write(values)
        if sink is not None:
            _write_dsink(a, sink_gradient([grads[3]]))

    return run


def _launch_tnd(
    a,
    batches,
    mode,
    sink,
    softmax_layout,
    env,
    pse_form=None,
    generated_dropout=None,
    restart_alibi=False,
    prefix_rows=0,
):
    """The variable-length entry points: each packed batch a dense backward (kernels/flash_attention/varlen.py);
    softmaxMax/Sum read in `softmax_layout`; the rope halves' and the sink's gradients when given; the pse
    read per batch as `pse_form` (varlen_pse.PackedPse) says; `generated_dropout` the (seed, offset) of a
    keep mask the kernel draws itself; `restart_alibi` whether the generated ALiBi drops the start indices
    after batch 0; `prefix_rows` the row block of kernels that skip blocks by prefixN in sparse mode 5."""
    params = score_params(a, "TND", mode, generated_dropout=generated_dropout, **_start_indices(a, env))
    drop, mask = (_present(t) for t in (a.dropMaskOptional, a.attenMaskOptional))
    pse = None if pse_form is None else a.pseShiftOptional
    ropes = [getattr(a, name, None) for name in ("queryRope", "keyInRope")]

    def run(workspace):
        grads = var_len_score_grad(
            a.query.read(),
            a.keyIn.read(),
            a.value.read(),
            a.dy.read(),
            a.attentionInOptional.read(),
            a.softmaxMaxOptional.read(),
            a.softmaxSumOptional.read(),
            params,
            batches.cu_q,
            batches.cu_kv,
            atten_mask=None if mask is None else mask.read(),
            drop_mask=None if drop is None else drop.read(),
            sink=None if sink is None else sink.read(),
            rope=None if None in ropes else tuple(t.read() for t in ropes),
            softmax_layout=softmax_layout,
            pse=None if pse is None else list(pse_form.batches(pse.read(), batches.q, batches.kv)),
            mask_row_stride=env.soc == ARCH35,
            restart_alibi=restart_alibi,
            prefix_rows=prefix_rows,
        )
        for name, out in (("dq", a.dqOut), ("dk", a.dkOut), ("dv", a.dvOut)):
            out.write(grads[name])
        for name, param in (("dq_rope", "dqRopeOut"), ("dk_rope", "dkRopeOut")):
            out = getattr(a, param, None)
            if name in grads and out is not None:
                out.write(grads[name])
        if "dsink" in grads:
            _write_dsink(a, grads["dsink"])

    return run
