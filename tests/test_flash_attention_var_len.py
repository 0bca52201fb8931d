"""The new FlashAttentionScore entry points through the Python API (ae.ops), forward then backward, against
torch.autograd of a float64 attention written per batch: a packed variable-length training step
(FlashAttentionVarLenScore -> FlashAttentionUnpaddingScoreGrad), the same with rope, sink and token-major
softmax statistics (V5 -> V5), the dense sink pair (FlashAttentionScoreV3 -> FlashAttentionScoreGradV3),
and the V1 entry points against V2."""

import numpy as np
import pytest

import aclnn_emu as ae
from aclnn_emu import pytest_plugin
import precision
from aclnn_emu.kernels.casts import BF16, FP16, cast_round
from precision import TORCH_BOUND, torch_floor

MASK = np.triu(np.ones((2048, 2048), np.uint8), 1)
NO_WINDOW = 2147483647
CU_Q, CU_KV = [16, 16, 53, 90], [24, 30, 67, 110]  # batch 1 has keys but no query tokens


def _make(rng, dtype, *shape):
    return cast_round(rng.standard_normal(shape), dtype)


def _reference(q, k, v, dy, scale, cu_q, cu_kv, qr=None, kr=None, sink=None, pse=None, pse_type=1, mask=None):
    """float64 outputs and gradients of right-down causal attention per packed batch (torch.autograd);
    `pse(b, s1, s2)` a batch's position term [N1, S1b, S2b], added before the scale for pseType 1;
    `mask(b, s1, s2)` a batch's masked positions [S1b, S2b] instead of the causal ones."""
    torch = pytest.importorskip("torch")
    leaves = {"q": q, "k": k, "v": v, "qr": qr, "kr": kr, "sink": sink}
    leaves = {
        n: torch.tensor(np.asarray(x, np.float64), requires_grad=True) for n, x in leaves.items() if x is not None
    }
    group = q.shape[1] // k.shape[1]
    outs, q0, k0 = [], 0, 0
    for b, (q1, k1) in enumerate(zip(cu_q, cu_kv)):
        rows, keys = slice(q0, q1), slice(k0, k1)
        q0, k0 = q1, k1
        if q1 == rows.start:
            continue
        qq, kk = leaves["q"][rows], leaves["k"][keys]
        if "qr" in leaves:
            qq, kk = torch.cat([qq, leaves["qr"][rows]], -1), torch.cat([kk, leaves["kr"][keys]], -1)
        kk, vv = kk.repeat_interleave(group, 1), leaves["v"][keys].repeat_interleave(group, 1)
        s = torch.einsum("ind,jnd->nij", qq, kk)
        if pse is None:
            s = s * scale
        else:
            term = torch.tensor(pse(b, q1 - rows.start, k1 - keys.start))
            s = (s + term) * scale if pse_type == 1 else s * scale + term
        i, j = torch.arange(s.shape[1])[:, None], torch.arange(s.shape[2])[None, :]
        masked = j - i > s.shape[2] - s.shape[1] if mask is None else torch.tensor(mask(b, *s.shape[1:]))
        s = s.masked_fill(masked, -np.finfo(np.float32).max)
        if "sink" in leaves:
            s = torch.cat([s, leaves["sink"][:, None, None].expand(-1, s.shape[1], 1)], -1)
        p = torch.softmax(s, -1)[..., : kk.shape[0]]
        outs.append(torch.einsum("nij,jnd->ind", p, vv))
    out = torch.cat(outs)
    (out * torch.tensor(np.asarray(dy, np.float64))).sum().backward()
    return out.detach().numpy(), {n: t.grad.numpy() for n, t in leaves.items()}


def _assert_close(name, got, want, dtype_name):
    failure = precision.failure(got, want, dtype_name, bound=TORCH_BOUND[dtype_name], floor=torch_floor(want))
    assert failure is None, f"{name}: {failure}"


def test_packed_training_step_var_len_then_unpadding():
    rng = np.random.default_rng(1)
    q, k, v = _make(rng, FP16, 90, 4, 32), _make(rng, FP16, 110, 2, 32), _make(rng, FP16, 110, 2, 32)
    dy, scale = _make(rng, FP16, 90, 4, 32), 0.125
    smax, ssum, _, out = ae.ops.FlashAttentionVarLenScore(
        q, k, v, None, None, None, MASK, None, CU_Q, CU_KV, scale, 1.0, NO_WINDOW, 0, 4, "TND", 0, 3
    )
    want_out, grads = _reference(q, k, v, dy, scale, CU_Q, CU_KV)
    rows = np.concatenate([np.arange(a, b) for a, b in zip([0] + CU_Q[:-1], CU_Q)])
    _assert_close("attention_out", out[rows], want_out, "float16")
    got = ae.ops.FlashAttentionUnpaddingScoreGrad(
        q,
        k,
        v,
        dy,
        None,
        None,
        None,
        MASK,
        smax,
        ssum,
        None,
        out,
        None,
        CU_Q,
        CU_KV,
        scale,
        1.0,
        NO_WINDOW,
        0,
        4,
        "TND",
        0,
        3,
    )
    for name, leaf in (("dqOut", "q"), ("dkOut", "k"), ("dvOut", "v")):
        _assert_close(name, getattr(got, name), grads[leaf], "float16")


def test_rope_sink_and_token_major_statistics_v5_pair():
    """VarLenScoreV5 -> UnpaddingScoreGradV5 with queryRope/keyRope (bf16), a sink and softmaxOutLayout /
    softmaxInLayout "same_as_input": the rope halves' gradients and dsink against torch.autograd."""
    rng = np.random.default_rng(2)
    q, k, v = _make(rng, BF16, 90, 4, 64), _make(rng, BF16, 110, 2, 64), _make(rng, BF16, 110, 2, 64)
    qr, kr = _make(rng, BF16, 90, 4, 32), _make(rng, BF16, 110, 2, 32)
    dy, sink, scale = _make(rng, BF16, 90, 4, 64), (rng.standard_normal(4) * 2).astype(np.float32), 0.1
    fwd = ae.ops.FlashAttentionVarLenScoreV5(
        q,
        qr,
        k,
        kr,
        v,
        None,
        None,
        None,
        MASK,
        sink,
        None,
        CU_Q,
        CU_KV,
        None,
        None,
        scale,
        1.0,
        NO_WINDOW,
        0,
        4,
        "TND",
        0,
        3,
        1,
        "same_as_input",
    )
    want_out, grads = _reference(q, k, v, dy, scale, CU_Q, CU_KV, qr, kr, sink)
    rows = np.concatenate([np.arange(a, b) for a, b in zip([0] + CU_Q[:-1], CU_Q)])
    _assert_close("attention_out", fwd.attentionOutOut[rows], want_out, "bfloat16")
    got = ae.ops.FlashAttentionUnpaddingScoreGradV5(
        q,
        qr,
        k,
        kr,
        v,
        dy,
        None,
        None,
        None,
        MASK,
        fwd.softmaxMaxOut,
        fwd.softmaxSumOut,
        None,
        fwd.attentionOutOut,
        sink,
        None,
        CU_Q,
        CU_KV,
        None,
        None,
        scale,
        1.0,
        NO_WINDOW,
        0,
        4,
        "TND",
        0,
        3,
        1,
        "same_as_input",
    )
    pairs = (("dqOut", "q"), ("dkOut", "k"), ("dvOut", "v"), ("dqRopeOut", "qr"), ("dkRopeOut", "kr"))
    for name, leaf in pairs:
        _assert_close(name, getattr(got, name), grads[leaf], "bfloat16")
    _assert_close("dsinkOut", got.dsinkOut, grads["sink"], "float32")


def test_dense_sink_pair_v3():
    """FlashAttentionScoreV3 -> FlashAttentionScoreGradV3 on BSND with a sink: out, dq/dk/dv and dsink."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    b, s, n, d = 2, 40, 2, 32
    q, k, v, dy = (_make(rng, FP16, b, s, n, d) for _ in range(4))
    sink, scale = rng.standard_normal(n).astype(np.float32), 0.2
    fwd = ae.ops.FlashAttentionScoreV3(
        q, k, v, None, None, None, None, sink, None, None, None, scale, 1.0, NO_WINDOW, NO_WINDOW, n, "BSND", 0, 0, 1
    )
    got = ae.ops.FlashAttentionScoreGradV3(
        q,
        k,
        v,
        dy,
        None,
        None,
        None,
        None,
        fwd.softmaxMaxOut,
        fwd.softmaxSumOut,
        None,
        fwd.attentionOutOut,
        sink,
        None,
        None,
        None,
        scale,
        1.0,
        NO_WINDOW,
        NO_WINDOW,
        n,
        "BSND",
        0,
        0,
        1,
    )
    # the reference, unmasked, one batch at a time
    packed = [x.reshape(b * s, n, d) for x in (q, k, v, dy)]
    leaves = [torch.tensor(np.asarray(x, np.float64), requires_grad=True) for x in packed[:3]]
    t_sink = torch.tensor(sink.astype(np.float64), requires_grad=True)
    outs = []
    for i in range(b):
        rows = slice(i * s, (i + 1) * s)
        sc = torch.einsum("ind,jnd->nij", leaves[0][rows], leaves[1][rows]) * scale
        sc = torch.cat([sc, t_sink[:, None, None].expand(-1, s, 1)], -1)
        outs.append(torch.einsum("nij,jnd->ind", torch.softmax(sc, -1)[..., :s], leaves[2][rows]))
    out = torch.cat(outs)
    (out * torch.tensor(np.asarray(packed[3], np.float64))).sum().backward()
    _assert_close("attention_out", fwd.attentionOutOut.reshape(b * s, n, d), out.detach().numpy(), "float16")
    for name, leaf in zip(("dqOut", "dkOut", "dvOut"), leaves):
        _assert_close(name, getattr(got, name).reshape(b * s, n, d), leaf.grad.numpy(), "float16")
    _assert_close("dsinkOut", got.dsinkOut, t_sink.grad.numpy(), "float32")


@pytest.mark.parametrize("version,reads_sink", [("9.0.0", False), ("9.1.0", True)])
def test_ascend950_reads_the_sink_from_9_1_0(monkeypatch, capfd, version, reads_sink):
    """FlashAttentionScoreGradV3 with a sink on Ascend950: 9.1.0's arch35 tiling reads it (ProcessSinkInfo), so the
    dsinkOut is the Atlas A2 one (checked against torch.autograd above); 9.0.0's ignores it and leaves dsinkOut
    unwritten."""
    rng = np.random.default_rng(5)
    b, s, n, d = 1, 24, 2, 16
    q, k, v, dy = (_make(rng, FP16, b, s, n, d) for _ in range(4))
    sink, scale = rng.standard_normal(n).astype(np.float32), 0.2
    attrs = (scale, 1.0, NO_WINDOW, NO_WINDOW, n, "BSND", 0, 0, 1)
    fwd = ae.ops.FlashAttentionScoreV3(q, k, v, None, None, None, None, sink, None, None, None, *attrs)
    stats = (fwd.softmaxMaxOut, fwd.softmaxSumOut, None, fwd.attentionOutOut, sink, None, None, None)

    def backward(soc):
        pytest_plugin.select(monkeypatch, soc=soc, cann_version=version)
        got = ae.ops.FlashAttentionScoreGradV3(q, k, v, dy, None, None, None, None, *stats, *attrs)
        return {name: np.array(getattr(got, name)) for name in ("dqOut", "dkOut", "dvOut", "dsinkOut")}

    a2 = backward("Ascend910B")
    capfd.readouterr()
    a5 = backward("Ascend910_95")
    for name in ("dqOut", "dkOut", "dvOut"):  # the sink enters them only through softmaxMax/Sum
        assert np.array_equal(a2[name], a5[name]), name
    assert ("sinkOptional is ignored" in capfd.readouterr().err) != reads_sink
    if reads_sink:
        assert np.any(a2["dsinkOut"] != 0) and np.array_equal(a2["dsinkOut"], a5["dsinkOut"])


def test_v1_entry_points_compute_what_v2_computes():
    """FlashAttentionScore / FlashAttentionScoreGrad are V2 with pseType 1 and no start indices: same bits."""
    rng = np.random.default_rng(4)
    q, k, v, dy = (_make(rng, FP16, 2, 24, 2, 16) for _ in range(4))
    args = (0.25, 1.0, NO_WINDOW, NO_WINDOW, 2, "BSND", 0, 0)
    v1 = ae.ops.FlashAttentionScore(q, k, v, None, None, None, None, None, *args)
    v2 = ae.ops.FlashAttentionScoreV2(q, k, v, None, None, None, None, None, None, None, *args, 1)
    for a, b in zip(v1, v2):
        if a is not None:
            np.testing.assert_array_equal(a, b)
    grads = [
        op(q, k, v, dy, None, None, None, None, v1[0], v1[1], None, v1[3], None, *extra, *args, *tail)
        for op, extra, tail in (
            (ae.ops.FlashAttentionScoreGrad, (), ()),
            (ae.ops.FlashAttentionScoreGradV2, (None, None), (1,)),
        )
    ]
    for a, b in zip(*grads):
        if a is not None:
            np.testing.assert_array_equal(a, b)


def test_softmax_out_layout_v4_is_the_token_major_view_of_v1():
    rng = np.random.default_rng(5)
    q, k, v = _make(rng, FP16, 90, 4, 32), _make(rng, FP16, 110, 2, 32), _make(rng, FP16, 110, 2, 32)
    common = (None, None, None, MASK, None, CU_Q, CU_KV, 0.125, 1.0, NO_WINDOW, 0, 4, "TND", 0, 3)
    v1 = ae.ops.FlashAttentionVarLenScore(q, k, v, *common)
    v4 = ae.ops.FlashAttentionVarLenScoreV4(q, k, v, *common, "same_as_input")
    np.testing.assert_array_equal(v1.attentionOutOut, v4.attentionOutOut)
    start = 0
    for end in CU_Q:
        block = v1.softmaxMaxOut.reshape(-1)[start * 32 : end * 32].reshape(4, end - start, 8)
        np.testing.assert_array_equal(block.transpose(1, 0, 2), v4.softmaxMaxOut[start:end])
        start = end


def _pse_step(forward, backward, pse, pse_type, alibi_terms, extra=()):
    """VarLen forward then Unpadding backward, equal packed lengths with a right-down causal mask, the
    same pse both ways, against torch.autograd."""
    rng = np.random.default_rng(8)
    cu = [16, 16, 53, 90]
    q, k, v = _make(rng, FP16, 90, 4, 32), _make(rng, FP16, 90, 2, 32), _make(rng, FP16, 90, 2, 32)
    dy, scale = _make(rng, FP16, 90, 4, 32), 0.125
    attrs = (scale, 1.0, NO_WINDOW, 0, 4, "TND", 0, 3, *extra)
    smax, ssum, _, out = forward(q, k, v, pse, None, None, MASK, None, cu, cu, *attrs)
    want_out, grads = _reference(q, k, v, dy, scale, cu, cu, pse=alibi_terms, pse_type=pse_type)
    rows = np.concatenate([np.arange(a, b) for a, b in zip([0] + cu[:-1], cu)])
    _assert_close("attention_out", out[rows], want_out, "float16")
    got = backward(q, k, v, dy, pse, None, None, MASK, smax, ssum, None, out, None, cu, cu, *attrs)
    for name, leaf in (("dqOut", "q"), ("dkOut", "k"), ("dvOut", "v")):
        _assert_close(name, getattr(got, name), grads[leaf], "float16")


CHIPS = ["Ascend910B", "Ascend910_95"]


@pytest.mark.parametrize("chip", CHIPS, indirect=True)
def test_packed_training_step_with_a_compressed_alibi_pse(chip):
    """VarLenScore -> UnpaddingScoreGrad (pseType 1) with the alibi pse [B, N1, 1024, maxS2] both accept
    (each batch reads its top-left block of the uncompressed ALiBi). On Ascend910_95 the arch35 kernels
    anchor their block reads elsewhere (pse.h PseAlibiComputeOffset, layout TND), the same values of a
    Toeplitz pse."""
    rng = np.random.default_rng(9)
    width = 37
    i, j = np.arange(width)[:, None], np.arange(width)[None, :]
    full = cast_round(-rng.random((4, 4, 1, 1)) / 4 * np.abs(j - i), FP16)
    compact = np.zeros((4, 4, 1024, width), FP16)
    compact[:, :, 1024 - width :] = full
    terms = lambda b, s1, s2: np.asarray(full[b, :, :s1, :s2], np.float64)  # noqa: E731
    _pse_step(ae.ops.FlashAttentionVarLenScore, ae.ops.FlashAttentionUnpaddingScoreGrad, compact, 1, terms)


@pytest.mark.parametrize("chip", CHIPS, indirect=True)
def test_packed_training_step_with_generated_alibi_v2(chip):
    """VarLenScoreV2 -> UnpaddingScoreGradV2 with pseType 2 slopes [B, N1]: -slope·|j - i| per batch."""
    slopes = (np.random.default_rng(10).random((4, 4)) / 4).astype(np.float32)

    def terms(b, s1, s2):
        i, j = np.arange(s1)[:, None], np.arange(s2)[None, :]
        return -np.asarray(slopes[b], np.float64)[:, None, None] * np.abs(j - i)

    def forward(q, k, v, pse, drop, pad, mask, prefix, cu_q, cu_kv, *attrs):
        return ae.ops.FlashAttentionVarLenScoreV2(
            q, k, v, pse, drop, pad, mask, prefix, cu_q, cu_kv, None, None, *attrs
        )

    def backward(q, k, v, dy, pse, drop, pad, mask, smax, ssum, sin, out, prefix, cu_q, cu_kv, *attrs):
        return ae.ops.FlashAttentionUnpaddingScoreGradV2(
            q, k, v, dy, pse, drop, pad, mask, smax, ssum, sin, out, prefix, cu_q, cu_kv, None, None, *attrs
        )

    _pse_step(forward, backward, slopes, 2, terms, extra=(2,))


def _refused_pse(pse, status, says):
    """VarLenScore with `pse` on the packed batches of CU_Q / CU_KV fails with `status`, saying why."""
    rng = np.random.default_rng(6)
    q, k, v = _make(rng, FP16, 90, 4, 32), _make(rng, FP16, 110, 2, 32), _make(rng, FP16, 110, 2, 32)
    with pytest.raises(ae.AclnnError) as error:
        ae.ops.FlashAttentionVarLenScore(
            q, k, v, pse, None, None, MASK, None, CU_Q, CU_KV, 0.125, 1.0, NO_WINDOW, 0, 4, "TND", 0, 3
        )
    assert error.value.status == status
    assert says in str(error.value)


def test_a_tnd_pse_shorter_than_the_kernel_reads_is_refused():
    """The tiling tells a packed pse by its dimension 0 (here N1·ΣS2) only: [440, 0] holds nothing, and
    the kernel would read past its end. Refused with 161001, naming the rule."""
    _refused_pse(np.zeros((4 * 110, 0), FP16), 161001, "holding fewer elements than the kernel reads")


@pytest.mark.parametrize("pse_type", [0, 1])
@pytest.mark.parametrize("packed", ["1s2", "s1s2"])
@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_arch35_training_step_with_a_one_dimensional_packed_pse(chip, packed, pse_type):
    """Ascend910_95: a 1-D pse of N1·ΣS2b (one row per head and batch) or N1·ΣS1b·S2b elements passes
    both tilings (the forward's AnalyzeTndPseOptionalInput tells it by dimension 0 and its
    SetPseAlibiParamsRegbase has no rank check; the backward's ProcessPseInfo takes a 1-D N1·T2 or
    N1·ΣS1b·S2b, T2 the last actualSeqKvLen, here less than the key's 110 rows), so it makes a training
    pair the Atlas A2/A3 tilings refuse; the kernels read batch b's block after the batches before it
    (pse.h PseComputeOffset)."""
    rng = np.random.default_rng(12)
    cu_q, cu_kv = [16, 16, 53, 90], [24, 30, 67, 104]
    q_lens = np.diff([0] + cu_q)
    kv_lens = np.diff([0] + cu_kv)
    rows = [(1 if packed == "1s2" else s1) * s2 for s1, s2 in zip(q_lens, kv_lens)]
    pse = cast_round(rng.standard_normal(4 * sum(rows)), FP16)
    starts = np.cumsum([0] + [4 * r for r in rows])

    def terms(b, s1, s2):
        block = np.asarray(pse[starts[b] : starts[b + 1]], np.float64)
        return np.broadcast_to(block.reshape(4, -1, s2), (4, s1, s2))

    q, k, v = _make(rng, FP16, 90, 4, 32), _make(rng, FP16, 110, 2, 32), _make(rng, FP16, 110, 2, 32)
    dy, scale = _make(rng, FP16, 90, 4, 32), 0.125
    attrs = (scale, 1.0, NO_WINDOW, 0, 4, "TND", 0, 3, pse_type)
    smax, ssum, _, out = ae.ops.FlashAttentionVarLenScoreV2(
        q, k, v, pse, None, None, MASK, None, cu_q, cu_kv, None, None, *attrs
    )
    want_out, grads = _reference(q, k, v, dy, scale, cu_q, cu_kv, pse=terms, pse_type=pse_type)
    rows_with_tokens = np.concatenate([np.arange(a, b) for a, b in zip([0] + cu_q[:-1], cu_q)])
    _assert_close("attention_out", out[rows_with_tokens], want_out, "float16")
    got = ae.ops.FlashAttentionUnpaddingScoreGradV2(
        q, k, v, dy, pse, None, None, MASK, smax, ssum, None, out, None, cu_q, cu_kv, None, None, *attrs
    )
    for name, leaf in (("dqOut", "q"), ("dkOut", "k"), ("dvOut", "v")):
        _assert_close(name, getattr(got, name), grads[leaf], "float16")


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_arch35_generated_alibi_needs_equal_lengths_in_the_forward_only(chip):
    """Ascend910_95: SetPseAlibiParamsRegbase of the arch35 VarLen tiling refuses pseType 2/3 slopes
    unless every batch has S1b = S2b (outside sparse mode 8): 161001. The backward's ProcessPseInfo asks
    no such thing."""
    rng = np.random.default_rng(13)
    q, k, v = _make(rng, FP16, 90, 4, 32), _make(rng, FP16, 110, 2, 32), _make(rng, FP16, 110, 2, 32)
    slopes = np.full((4,), 0.25, np.float32)
    attrs = (0.125, 1.0, NO_WINDOW, 0, 4, "TND", 0, 3, 2)
    with pytest.raises(ae.AclnnError) as error:
        ae.ops.FlashAttentionVarLenScoreV2(q, k, v, slopes, None, None, MASK, None, CU_Q, CU_KV, None, None, *attrs)
    assert error.value.status == 161001
    assert "Inner pse alibi is only support when actualSeqQLen and actualSeqKvLen are equal" in str(error.value)
    smax = np.zeros((90, 4, 8), np.float32)
    got = ae.ops.FlashAttentionUnpaddingScoreGradV2(
        q, k, v, q, slopes, None, None, MASK, smax, smax, None, q, None, CU_Q, CU_KV, None, None, *attrs
    )
    assert got.dqOut.shape == q.shape


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_arch35_generated_alibi_takes_a_lone_q_start_index(chip):
    """Ascend910_95: the arch35 forward's SetQKVStartIdx stores qStartIdx and kvStartIdx independently,
    so a qStartIdx without a kvStartIdx shifts the generated ALiBi as (qStartIdx, 0) does (the Atlas A2/A3
    tiling takes both or neither). No mask: under a causal one a shift only adds a constant per row."""
    rng = np.random.default_rng(14)
    cu = [16, 16, 53, 90]
    q, k, v = _make(rng, FP16, 90, 4, 32), _make(rng, FP16, 90, 2, 32), _make(rng, FP16, 90, 2, 32)
    slopes = np.full((4,), 0.25, np.float32)
    attrs = (0.125, 1.0, NO_WINDOW, NO_WINDOW, 4, "TND", 0, 0, 2)

    def run(q_start, kv_start):
        return ae.ops.FlashAttentionVarLenScoreV2(
            q, k, v, slopes, None, None, None, None, cu, cu, q_start, kv_start, *attrs
        ).attentionOutOut

    lone = run((3,), None)
    np.testing.assert_array_equal(lone, run((3,), (0,)))
    assert not np.array_equal(lone, run(None, None))


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_arch35_backward_refuses_slopes_in_sparse_mode_7_without_a_mask(chip):
    """Ascend910_95: the backward's ProcessInnerPseInfo tests the sparseMode attribute, with or without an
    attenMask: pseType 2 slopes with sparseMode 7 and no mask fail (161001)."""
    rng = np.random.default_rng(15)
    cu = [16, 16, 53, 90]
    q, k = _make(rng, FP16, 90, 4, 32), _make(rng, FP16, 90, 2, 32)
    smax = np.zeros((90, 4, 8), np.float32)
    with pytest.raises(ae.AclnnError) as error:
        ae.ops.FlashAttentionUnpaddingScoreGradV2(
            q, k, k, q, np.full((4,), 0.25, np.float32), None, None, None, smax, smax, None, q, None, cu, cu,
            None, None, 0.125, 1.0, NO_WINDOW, 0, 4, "TND", 0, 7, 2,
        )  # fmt: skip
    assert error.value.status == 161001
    assert "INNER Pse does not support sparse mode 7" in str(error.value)


def _unpadding(q, k, cu_q, cu_kv, mask=None, pse=None, sparse_mode=0, pre=NO_WINDOW, nxt=NO_WINDOW):
    """UnpaddingScoreGradV2 of zero statistics (dy = attentionIn = query): for the checks only."""
    smax = np.zeros((q.shape[0], q.shape[1], 8), np.float32)
    return ae.ops.FlashAttentionUnpaddingScoreGradV2(
        q, k, k, q, pse, None, None, mask, smax, smax, None, q, None, cu_q, cu_kv, None, None,
        0.125, 1.0, pre, nxt, q.shape[1], "TND", 0, sparse_mode, 1,
    )  # fmt: skip


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_arch35_backward_checks_the_sparse_mode_without_a_mask_unless_lengths_are_equal(chip):
    """Ascend910_95: ProcessSparseModeInfo runs CheckVarLenSparseModeValue with or without a mask (sparse
    mode 5: 161001), except when every batch has the same lengths (isAllSame): the layout becomes BSND,
    whose CheckSparseModeValue takes modes 0-6, and with no mask the call runs."""
    rng = np.random.default_rng(16)
    q, k = _make(rng, FP16, 90, 4, 32), _make(rng, FP16, 110, 2, 32)
    with pytest.raises(ae.AclnnError) as error:
        _unpadding(q, k, CU_Q, CU_KV, sparse_mode=5)
    assert error.value.status == 161001
    assert "Var len not support sparse mode 5" in str(error.value)
    same = _unpadding(q[:80], k[:80], [40, 80], [40, 80], sparse_mode=5)
    assert same.dqOut.shape == (80, 4, 32)


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_arch35_bsnd_backward_in_prefix_mode_skips_blocks_by_prefix_n(chip):
    """Ascend910_95, two batches of 200 queries and 200 keys, N1 4 over N2 2 (the BN2GS1S2 kernels, layout
    BSND), sparse mode 5 with a [B, 1, 200, 200] mask: the mask is read as mode 1's, and CheckIsValidBlock
    skips each 128 x 128 block starting at a column >= min(max(S2 - S1 + its rows' end, prefixN[b]), S2):
    with prefix (40, 150), batch 0's rows 0-127 lose keys 128-199 whatever the mask says. The forward
    (VarLen has no mode 5) ran with mode 1 and the same mask; the gradients against float64 (golden)."""
    from golden import flash_attention_var_len as golden

    rng = np.random.default_rng(44)
    cu, heads, scale = [200, 400], (4, 2), 0.25
    q, k, v, dy = (_make(rng, FP16, 400, n, 16) for n in (4, 2, 2, 4))
    mask = (rng.random((2, 1, 200, 200)) < 0.2).astype(np.uint8)
    mask[..., :8] = 0  # every row keeps keys
    fwd = ae.ops.FlashAttentionVarLenScoreV2(
        q, k, v, None, None, None, mask, None, cu, cu, None, None, scale, 1.0, NO_WINDOW, NO_WINDOW, 4, "TND", 0, 1, 1
    )
    grads = ae.ops.FlashAttentionUnpaddingScoreGradV2(
        q, k, v, dy, None, None, None, mask, fwd.softmaxMaxOut, fwd.softmaxSumOut, None, fwd.attentionOutOut,
        [40, 150], cu, cu, None, None, scale, 1.0, NO_WINDOW, NO_WINDOW, heads[0], "TND", 0, 5, 1,
    )  # fmt: skip
    skipped = np.zeros_like(mask)
    skipped[0, 0, :128, 128:] = 1
    spec = dict(scale=scale, sparse_mode=1, pre_tokens=NO_WINDOW, next_tokens=NO_WINDOW, prefix=None)
    spec.update(mask_row_stride=True)
    _, row_max, row_sum, _ = golden.forward(q, k, v, cu, cu, dtype_name="float16", atten_mask=mask, **spec)
    args = (q, k, v, dy, fwd.attentionOutOut, row_max, row_sum, cu, cu)
    spec.update(dtype_name="float16", atten_mask=mask | skipped)
    want, floors = golden.backward(*args, **spec), golden.backward(*args, floors=True, **spec)
    for name, got in (("dq", grads.dqOut), ("dk", grads.dkOut), ("dv", grads.dvOut)):
        failure = precision.failure(got, want[name], "float16", floor=floors[name])
        assert failure is None, f"{name}: {failure}"
    unskipped = golden.backward(*args, **{**spec, "atten_mask": mask})
    assert precision.failure(grads.dkOut, unskipped["dk"], "float16", floor=floors["dk"]) is not None


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_arch35_backward_in_prefix_mode_on_the_bn2s2_split_is_mode_1(chip):
    """Ascend910_95, batches of the same lengths, N1 = N2 and S 200 (SetSplitAxis: layout TND, BN2S2): sparse
    mode 5 with a mask reads it as mode 1 does and reads no prefixN (IsValid skips by the tokens, none
    here), so its gradients are mode 1's bit for bit; a band that leaves blocks out is not established
    (561003)."""
    rng = np.random.default_rng(45)
    q, k = _make(rng, FP16, 400, 2, 16), _make(rng, FP16, 400, 2, 16)
    mask = (rng.random((2, 1, 200, 200)) < 0.2).astype(np.uint8)
    five = _unpadding(q, k, [200, 400], [200, 400], mask=mask, sparse_mode=5)
    one = _unpadding(q, k, [200, 400], [200, 400], mask=mask, sparse_mode=1)
    for name in ("dqOut", "dkOut", "dvOut"):
        np.testing.assert_array_equal(getattr(five, name), getattr(one, name))
    with pytest.raises(ae.AclnnError) as error:
        _unpadding(q, k, [200, 400], [200, 400], mask=mask, sparse_mode=5, pre=300, nxt=0)
    assert error.value.status == 561003
    assert "the pre/next tokens leave blocks out" in str(error.value)


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_arch35_bsnd_backward_in_prefix_mode_refuses_a_missing_prefix(chip):
    """Ascend910_95, the BSND kernels (N1 4 over N2 2), sparse mode 5 with a mask and no prefix: the tiling
    only warns (SetPrefixSparseParams), the kernels read prefixN[b] (161001, refused.tnd_prefix_short)."""
    rng = np.random.default_rng(17)
    q, k = _make(rng, FP16, 60, 4, 32), _make(rng, FP16, 80, 2, 32)
    with pytest.raises(ae.AclnnError) as error:
        _unpadding(q, k, [30, 60], [40, 80], mask=np.zeros((2, 1, 30, 40), np.uint8), sparse_mode=5)
    assert error.value.status == 161001
    assert "without a prefix of one value per batch" in str(error.value)


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_arch35_backward_s_bsnd_path_anchors_the_alibi_at_s1(chip):
    """Ascend910_95, batches of 30 queries and 40 keys each, left-up causal: the backward runs as BSND and
    reads the alibi [B, N1, 1024, 40] at row 1024 - S1 + i (pse.h PseAlibiComputeOffset, non-TND branch),
    not 1024 - maxS2 + i as TND. The forward refuses this alibi (S1 != S2), so its statistics come from
    the same terms as a 1-D packed pse; the gradients against torch.autograd."""
    rng = np.random.default_rng(18)
    cu_q, cu_kv = [30, 60], [40, 80]
    q, k, v = _make(rng, FP16, 60, 4, 32), _make(rng, FP16, 80, 2, 32), _make(rng, FP16, 80, 2, 32)
    dy, scale = _make(rng, FP16, 60, 4, 32), 0.125
    alibi = cast_round(rng.standard_normal((2, 4, 1024, 40)), FP16)
    terms = alibi[:, :, 1024 - 30 :, :]  # [B, N1, S1, S2]
    attrs = (scale, 1.0, NO_WINDOW, 0, 4, "TND", 0, 2, 1)
    smax, ssum, _, out = ae.ops.FlashAttentionVarLenScoreV2(
        q, k, v, terms.reshape(-1), None, None, MASK, None, cu_q, cu_kv, None, None, *attrs
    )
    causal = lambda b, s1, s2: np.arange(s2)[None, :] > np.arange(s1)[:, None]  # noqa: E731
    pse = lambda b, s1, s2: np.asarray(terms[b], np.float64)  # noqa: E731
    want_out, grads = _reference(q, k, v, dy, scale, cu_q, cu_kv, pse=pse, mask=causal)
    _assert_close("attention_out", out, want_out, "float16")
    got = ae.ops.FlashAttentionUnpaddingScoreGradV2(
        q, k, v, dy, alibi, None, None, MASK, smax, ssum, None, out, None, cu_q, cu_kv, None, None, *attrs
    )
    for name, leaf in (("dqOut", "q"), ("dkOut", "k"), ("dvOut", "v")):
        _assert_close(name, getattr(got, name), grads[leaf], "float16")


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_arch35_draws_the_tnd_keep_mask_per_batch(chip, capfd):
    """Ascend910_95, keepProb < 1 and no dropMask: VarLenScore and UnpaddingScoreGrad draw the keep mask
    (seed 0, offset 0), batch b from element N1·Σ_{c<b} S1c·align16(S2c); the same bits given as dropMask
    give the same results, bit for bit, with a portability warning for what is inferred."""
    from aclnn_emu.kernels.flash_attention.dropout import keep_mask

    rng = np.random.default_rng(11)
    q, k, v = _make(rng, FP16, 90, 4, 32), _make(rng, FP16, 110, 2, 32), _make(rng, FP16, 110, 2, 32)
    dy = _make(rng, FP16, 90, 4, 32)
    bits, start = [], 0
    for (q0, q1), (k0, k1) in zip(zip([0] + CU_Q[:-1], CU_Q), zip([0] + CU_KV[:-1], CU_KV)):
        bits.append(keep_mask(0, 4 * start, 4 * (q1 - q0), k1 - k0, 0.75).reshape(-1))
        start += (q1 - q0) * -(-(k1 - k0) // 16) * 16
    given = np.packbits(np.concatenate(bits), bitorder="little")
    attrs = (0.125, 0.75, NO_WINDOW, 0, 4, "TND", 0, 3)
    runs = []
    for drop in (None, given):
        fwd = ae.ops.FlashAttentionVarLenScore(q, k, v, None, drop, None, MASK, None, CU_Q, CU_KV, *attrs)
        smax, ssum, _, out = fwd
        bwd = ae.ops.FlashAttentionUnpaddingScoreGrad(
            q, k, v, dy, None, drop, None, MASK, smax, ssum, None, out, None, CU_Q, CU_KV, *attrs
        )
        runs.append((out, bwd.dqOut, bwd.dkOut, bwd.dvOut))
    for drawn, read in zip(*runs):
        np.testing.assert_array_equal(drawn, read)
    assert "portability: keepProb 0.75 with no dropMask" in capfd.readouterr().err


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_arch35_training_step_with_a_per_batch_4d_mask(chip):
    """Ascend910_95, a [B, 1, maxS1, maxS2] attenMask: VarLenScore then UnpaddingScoreGrad read batch b's
    row i from element Σ_{c<b} S1c·S2c + i·maxS2 (arch35 ComputeOffsetForNoCompress), against torch.autograd."""
    rng = np.random.default_rng(12)
    q, k, v = _make(rng, FP16, 90, 4, 32), _make(rng, FP16, 110, 2, 32), _make(rng, FP16, 110, 2, 32)
    dy, scale = _make(rng, FP16, 90, 4, 32), 0.125
    lengths = [(q1 - q0, k1 - k0) for q0, q1, k0, k1 in zip([0] + CU_Q[:-1], CU_Q, [0] + CU_KV[:-1], CU_KV)]
    width = max(s2 for _, s2 in lengths)
    mask = (rng.random((4, 1, max(s1 for s1, _ in lengths), width)) < 0.4).astype(np.uint8)
    flat, starts = mask.reshape(-1), np.cumsum([0] + [s1 * s2 for s1, s2 in lengths])
    for (s1, _), start in zip(lengths, starts):
        flat[start + width * np.arange(s1)] = 0  # every row keeps its first key

    def read(b, s1, s2):
        return np.array([flat[starts[b] + i * width : starts[b] + i * width + s2] for i in range(s1)]) != 0

    smax, ssum, _, out = ae.ops.FlashAttentionVarLenScore(
        q, k, v, None, None, None, mask, None, CU_Q, CU_KV, scale, 1.0, NO_WINDOW, 0, 4, "TND", 0, 1
    )
    want_out, grads = _reference(q, k, v, dy, scale, CU_Q, CU_KV, mask=read)
    rows = np.concatenate([np.arange(a, b) for a, b in zip([0] + CU_Q[:-1], CU_Q)])
    _assert_close("attention_out", out[rows], want_out, "float16")
    got = ae.ops.FlashAttentionUnpaddingScoreGrad(
        q,
        k,
        v,
        dy,
        None,
        None,
        None,
        mask,
        smax,
        ssum,
        None,
        out,
        None,
        CU_Q,
        CU_KV,
        scale,
        1.0,
        NO_WINDOW,
        0,
        4,
        "TND",
        0,
        1,
    )
    for name, leaf in (("dqOut", "q"), ("dkOut", "k"), ("dvOut", "v")):
        _assert_close(name, getattr(got, name), grads[leaf], "float16")


def test_tnd_cumulative_lengths_that_decrease_are_not_emulated():
    """A TND call the emulator does not run returns 561003 and says why (its rule is in docs/coverage.md)."""
    rng = np.random.default_rng(6)
    q, k, v = _make(rng, FP16, 90, 4, 32), _make(rng, FP16, 110, 2, 32), _make(rng, FP16, 110, 2, 32)
    # lengths clamped to 16, 0, 40, 30: within T1, but the list decreases
    cu_q = [16, 10, 50, 80]
    with pytest.raises(ae.AclnnError) as error:
        ae.ops.FlashAttentionVarLenScoreV2(
            q, k, v, None, None, None, MASK, None, cu_q, CU_KV, None, None, 0.125, 1.0, NO_WINDOW, 0, 4, "TND", 0, 3, 1
        )
    assert error.value.status == 561003
    assert "actualSeqQLen / actualSeqKvLen that decrease" in str(error.value)


@pytest.mark.parametrize(
    "lengths, starts, masked, forward_restarts, backward_restarts",
    [
        # S1s2Bn2gs1s2: the backward kernel's innerAlibiFlag tests the sparseMode attribute (the tiling's
        # set_sparseMode), the forward's its sparse type, which is mode 8 only with a mask
        (((11, 12, 30), (9, 12, 30)), (1, 3), False, False, True),
        # SameAb (>= 1024 tokens per batch on average): its backward kernel keeps the start indices
        (((1024, 1024), (1026, 1024)), (3, 1), True, True, False),
    ],
    ids=["no_mask", "same_ab"],
)
@pytest.mark.parametrize("chip", ["Ascend910B"], indirect=True)
def test_a2a3_backward_restarts_mode_8_slopes_as_its_kernel_does(
    chip, lengths, starts, masked, forward_restarts, backward_restarts
):
    """Atlas A2/A3, sparseMode 8 with pseType 2 slopes and start indices: whether the generated
    ALiBi drops the start indices after batch 0 is each kernel's own choice (op_kernel/arch32
    flash_attention_score_grad_s1s2_bn2gs1s2.h innerAlibiFlag: the attribute; flash_attention_score_s1s2_bn2gs1.h:
    the sparse type; ..._grad_s1s2_bn2gs1s2_sab.h: never), so forward and backward may disagree."""
    from golden import flash_attention_var_len as golden

    rng = np.random.default_rng(31)
    cu_q, cu_kv = (np.cumsum(x).tolist() for x in lengths)
    heads, d = (4, 32) if not masked else (1, 16)
    q, k, v, dy = (_make(rng, FP16, t, heads, d) for t in (cu_q[-1], cu_kv[-1], cu_kv[-1], cu_q[-1]))
    slopes = (rng.random(heads) / 4).astype(np.float32)
    mask = MASK if masked else None
    scale, shift, starts = 1 / np.sqrt(d), starts[1] - starts[0], ((starts[0],), (starts[1],))
    fwd = ae.ops.FlashAttentionVarLenScoreV2(
        q, k, v, slopes, None, None, mask, None, cu_q, cu_kv, *starts, scale, 1.0, NO_WINDOW, 0, heads, "TND", 0, 8, 2
    )
    grads = ae.ops.FlashAttentionUnpaddingScoreGradV2(
        q, k, v, dy, slopes, None, None, mask, fwd.softmaxMaxOut, fwd.softmaxSumOut, None, fwd.attentionOutOut, None,
        cu_q, cu_kv, *starts, scale, 1.0, NO_WINDOW, 0, heads, "TND", 0, 8, 2,
    )  # fmt: skip
    spec = dict(scale=scale, atten_mask=mask, sparse_mode=8 if masked else 0, pre_tokens=NO_WINDOW, next_tokens=0)
    spec.update(prefix=None, pse_type=2)
    terms = {flag: golden.slope_pse(slopes, 2, shift, restart_after_first=flag) for flag in (False, True)}
    _, row_max, row_sum, _ = golden.forward(
        q, k, v, cu_q, cu_kv, dtype_name="float16", pse_terms=terms[forward_restarts], **spec
    )
    args = (q, k, v, dy, fwd.attentionOutOut, row_max, row_sum, cu_q, cu_kv)
    spec.update(dtype_name="float16", pse_terms=terms[backward_restarts])
    want, floors = golden.backward(*args, **spec), golden.backward(*args, floors=True, **spec)
    for name, got in (("dq", grads.dqOut), ("dk", grads.dkOut), ("dv", grads.dvOut)):
        failure = precision.failure(got, want[name], "float16", floor=floors[name])
        assert failure is None, f"{name}: {failure}"
    other = golden.backward(*args, **{**spec, "pse_terms": terms[not backward_restarts]})
    assert precision.failure(grads.dqOut, other["dq"], "float16", floor=floors["dq"]) is not None


def _arch35_alibi_step(rng, heads, lengths, alibi, terms):
    """VarLenScore with the terms a 1-D packed pse (the forward refuses the alibi when S1 != S2), then
    UnpaddingScoreGrad with `alibi`, left-up causal, against torch.autograd with `terms` [B, N1, S1, S2]."""
    (s1, s2), (n1, n2) = lengths, heads
    q, k, v, dy = (_make(rng, FP16, t, n, 16) for t, n in ((s1, n1), (s2, n2), (s2, n2), (s1, n1)))
    attrs = (0.25, 1.0, NO_WINDOW, 0, n1, "TND", 0, 2, 1)
    packed = cast_round(terms, FP16).reshape(-1)
    smax, ssum, _, out = ae.ops.FlashAttentionVarLenScoreV2(
        q, k, v, packed, None, None, MASK, None, [s1], [s2], None, None, *attrs
    )
    causal = lambda b, a, c: np.arange(c)[None, :] > np.arange(a)[:, None]  # noqa: E731
    pse = lambda b, a, c: np.asarray(terms[b], np.float64)  # noqa: E731
    _, grads = _reference(q, k, v, dy, 0.25, [s1], [s2], pse=pse, mask=causal)
    got = ae.ops.FlashAttentionUnpaddingScoreGradV2(
        q, k, v, dy, alibi, None, None, MASK, smax, ssum, None, out, None, [s1], [s2], None, None, *attrs
    )
    for name, leaf in (("dqOut", "q"), ("dkOut", "k"), ("dvOut", "v")):
        _assert_close(name, getattr(got, name), grads[leaf], "float16")


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_arch35_bsnd_backward_reads_alibi_rows_above_the_last_1024_per_row_block(chip):
    """Ascend910_95, one batch of 1100 queries and 1050 keys, N1 4 over N2 2 (the BN2GS1S2 kernels, layout
    BSND), an arbitrary alibi [1, 4, 1024, 1050]: pse.h PseAlibiComputeOffset anchors each 128-row block
    at row0 - 76 when row0 >= 76, else at (row0 % 1024, W - row0 + col0 - 1024 + row0 % 1024), so rows
    0-127 (76-127 included) read the other anchoring; the gradients against torch.autograd of those reads
    (golden.alibi_bsnd_reads)."""
    from golden import flash_attention_var_len as golden

    rng = np.random.default_rng(41)
    alibi = cast_round(rng.standard_normal((1, 4, 1024, 1050)), FP16)
    terms = golden.alibi_bsnd_reads(alibi, 1100, 1050)
    assert not np.array_equal(terms[0, :, 76:128], np.asarray(alibi[0, :, :52, :], np.float64))
    _arch35_alibi_step(rng, (4, 2), (1100, 1050), alibi, terms)


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_arch35_backward_on_the_bn2s2_split_reads_the_alibi_as_tnd(chip):
    """Ascend910_95, one batch of 200 queries and 240 keys, N1 = N2: the backward's tiling runs it as BSND
    but SetSplitAxis gives the layout TND back with the BN2S2 split, so the kernels read the alibi
    [1, 2, 1024, 240] as TND, row 1024 - 240 + i (not 1024 - S1 + i): a Toeplitz ALiBi gives -slope·|j - i|."""
    rng = np.random.default_rng(42)
    i, j = np.arange(240)[:, None], np.arange(240)[None, :]
    slopes = np.array([0.25, 0.0625])[:, None, None]
    ori = cast_round(-slopes * np.abs(j - i), FP16)
    alibi = np.zeros((1, 2, 1024, 240), FP16)
    alibi[0, :, 1024 - 240 :] = ori
    terms = np.asarray(ori, np.float64)[None, :, :200, :]
    _arch35_alibi_step(rng, (2, 2), (200, 240), alibi, terms)


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_arch35_bsnd_backward_refuses_an_alibi_read_before_its_start(chip):
    """Ascend910_95, S1 1100 > 1024 with W = 1000 < 1024 on the BSND kernels: row 0 reads W - 1024
    elements before the first head's block, before the tensor (refused.tnd_alibi_before_start)."""
    rng = np.random.default_rng(43)
    q, k = _make(rng, FP16, 1100, 4, 16), _make(rng, FP16, 1000, 2, 16)
    alibi = np.zeros((1, 4, 1024, 1000), FP16)
    smax = np.zeros((1100, 4, 8), np.float32)
    with pytest.raises(ae.AclnnError) as error:
        ae.ops.FlashAttentionUnpaddingScoreGradV2(
            q, k, k, q, alibi, None, None, MASK, smax, smax, None, q, None, [1100], [1000], None, None,
            0.25, 1.0, NO_WINDOW, 0, 4, "TND", 0, 2, 1,
        )  # fmt: skip
    assert error.value.status == 161001
    assert "before the tensor's first element" in str(error.value)


@pytest.mark.parametrize("version, code", [("8.5.0", 0), ("9.0.0", 161001)])
def test_arch35_bn2s2_split_with_dropout_and_d_256_per_release(monkeypatch, version, code):
    """Ascend950 (9.x) / Ascend910_95, batches of the same lengths, N1 = N2, D 256 and keepProb 0.9, sparse mode
    5 with a mask and no prefix: 8.5's SetSplitAxis takes the BN2S2 split (layout TND, no prefixN read: the
    call runs); from 9.0.0 BN2S2 needs keepProb 1 or D <= 128 (versions fag.arch35_bn2s2_needs_d128_with_dropout),
    so the BSND kernels read prefixN[b] of a missing prefix (refused.tnd_prefix_short)."""
    pytest_plugin.select(monkeypatch, soc="Ascend910_95", cann_version=version)
    rng = np.random.default_rng(46)
    q, k = _make(rng, FP16, 400, 2, 256), _make(rng, FP16, 400, 2, 256)
    smax = np.zeros((400, 2, 8), np.float32)
    mask = np.zeros((2, 1, 200, 200), np.uint8)
    call = (q, k, k, q, None, None, None, mask, smax, smax, None, q, None, [200, 400], [200, 400], None, None)
    try:
        ae.ops.FlashAttentionUnpaddingScoreGradV2.prepare(*call, 0.25, 0.9, NO_WINDOW, NO_WINDOW, 2, "TND", 0, 5, 1)
        status = 0
    except ae.AclnnError as error:
        status = error.status
    assert status == code
