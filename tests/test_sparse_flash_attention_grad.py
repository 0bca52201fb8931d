"""aclnnSparseFlashAttentionGrad numerics through the Python API against the float64 golden.

Covers bf16/fp16, BSND/TND, sparse modes 0 and 3, block sizes 1 and 16, duplicate indices, -1
padding and rope on/off; the kernel's own rules (first -1 ends a row, unselected keys get zero,
only the diagonal block is masked) and the inputs the sanitizer reports.
"""

import ml_dtypes
import numpy as np
import pytest

import aclnn_emu as ae
from aclnn_emu import dtypes
from aclnn_emu.runtime import sanitizer
import ties
from golden import sparse_flash_attention_grad as golden

NAME = {np.dtype(np.float16): "fp16", np.dtype(ml_dtypes.bfloat16): "bf16"}
OUT_OF = {"dq": "query", "dk": "key", "dv": "value", "dq_rope": "queryRope", "dk_rope": "keyRope"}


def run_op(case, attrs, **overrides):
    """Both phases through aclnn_emu.run; returns the five outputs (None where rope is off)."""
    dev = {name: ae.to_device(array) for name, array in case.items()}
    dtype = dtypes.from_numpy(case["query"].dtype)
    outs = {key: ae.empty(case[src].shape, dtype) if src in case else None for key, src in OUT_OF.items()}
    args = dict(
        scale=attrs["scale"],
        block_size=attrs["block_size"],
        layout=attrs["layout"],
        sparse_mode=attrs["sparse_mode"],
        **overrides,
    )
    try:
        ae.run(
            "SparseFlashAttentionGrad",
            dev["query"],
            dev["key"],
            dev["value"],
            dev["sparseIndices"],
            dev["dOut"],
            dev["out"],
            dev["softmaxMax"],
            dev["softmaxSum"],
            dev.get("actualSeqLengthsQuery"),
            dev.get("actualSeqLengthsKv"),
            dev.get("queryRope"),
            dev.get("keyRope"),
            args["scale"],
            args["block_size"],
            args["layout"],
            args["sparse_mode"],
            2147483647,
            2147483647,
            False,
            *outs.values(),
        )
        return {key: None if t is None else ae.numpy(t) for key, t in outs.items()}
    finally:
        for t in [*dev.values(), *outs.values()]:
            if t is not None:
                ae.free(t)


def make(dtype=ml_dtypes.bfloat16, layout="TND", seed=0, **options):
    shape = dict(q_lens=[16, 24], kv_lens=[300, 260], n1=8, d=128, nsel=160)
    shape.update(options)
    return golden.make_case(np.random.default_rng(seed), dtype=dtype, layout=layout, **shape)


@pytest.fixture(autouse=True)
def clean_reports():
    sanitizer.clear()
    yield
    sanitizer.clear()


VARIANTS = [  # block size, sparse mode, rope dim, duplicate indices
    (1, 0, 0, False),
    (1, 3, 64, True),
    (16, 3, 0, True),
    (16, 0, 64, False),
]


@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, np.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("layout", ["BSND", "TND"])
@pytest.mark.parametrize(
    "bs, mode, dr, dup", VARIANTS, ids=[f"bs{v[0]}-mode{v[1]}-rope{v[2]}-dup{int(v[3])}" for v in VARIANTS]
)
def test_matches_the_hardware_maths(dtype, layout, bs, mode, dr, dup):
    case, attrs = make(
        dtype, layout, block_size=bs, sparse_mode=mode, dr=dr, duplicates=dup, nsel=160 if bs == 1 else 12
    )
    out = run_op(case, attrs)
    assert golden.precision_failures(out, case, attrs, NAME[np.dtype(dtype)]) == []
    assert (out["dq_rope"] is not None) == (dr > 0)
    assert sanitizer.reports() == []


@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, np.float16], ids=["bf16", "fp16"])
def test_a_kernel_without_the_hardware_roundings_fails(monkeypatch, dtype):
    """Without CAST_ROUND of P and dS before their matmuls, every output fails both checks."""
    from aclnn_emu.kernels.sparse_attention import sparse_flash_attention_grad as kernel

    monkeypatch.setattr(kernel, "round_half_away_", lambda x, dtype: x)  # P, outputs: numpy's cast
    monkeypatch.setattr(kernel, "CAST_ROUND", {np.dtype(dtype): None})  # dS
    case, attrs = make(dtype, block_size=1, sparse_mode=3, dr=64, duplicates=True, nsel=160)
    failures = golden.precision_failures(run_op(case, attrs), case, attrs, NAME[np.dtype(dtype)])
    assert sorted(f.split(":")[0] for f in failures) == sorted(golden.OUTPUTS * 2)


def test_long_rows_run_in_several_steps(monkeypatch):
    """Rows whose keys exceed the per-step budget are cut into column steps; dq sums the steps."""
    from aclnn_emu.kernels.sparse_attention import sparse_flash_attention_grad as kernel

    monkeypatch.setattr(kernel, "SLOT_BUDGET", 48)
    case, attrs = make(block_size=16, sparse_mode=3, dr=64, nsel=12)
    lengths = (case["sparseIndices"].reshape(40, -1)[:, 0] >= 0) * 12 * 16
    assert max(s.c0 for s in kernel._plan(lengths, 8)) > 0
    out = run_op(case, attrs)
    assert golden.precision_failures(out, case, attrs, "bf16") == []


def test_is_deterministic():
    case, attrs = make(block_size=1, duplicates=True)
    first, second = run_op(case, attrs), run_op(case, attrs)
    for key in ("dq", "dk", "dv"):
        assert first[key].tobytes() == second[key].tobytes()


def test_first_minus_one_ends_a_row():
    case, attrs = make(q_lens=[8], kv_lens=[64], nsel=20)
    idx = case["sparseIndices"].reshape(8, -1)
    stop = np.argmax(idx == -1, axis=1)
    tail = case["sparseIndices"].copy().reshape(8, -1)
    for r, s in enumerate(stop):
        tail[r, s + 1 : s + 5] = np.arange(4) + 40  # valid ids after the first -1
    reference = run_op(case, attrs)
    case["sparseIndices"] = tail.reshape(case["sparseIndices"].shape)
    changed = run_op(case, attrs)
    for key in ("dq", "dk", "dv"):
        assert changed[key].tobytes() == reference[key].tobytes()


def test_unselected_keys_and_empty_rows_get_zero():
    case, attrs = make(q_lens=[8], kv_lens=[64], nsel=10)
    idx = case["sparseIndices"].reshape(8, -1)
    out = run_op(case, attrs)
    chosen = np.zeros(64, bool)
    for row in idx:
        chosen[row[: np.argmax(row == -1)]] = True
    dk, dv = out["dk"].reshape(64, -1).astype(np.float32), out["dv"].reshape(64, -1).astype(np.float32)
    assert not np.any(dk[~chosen]) and not np.any(dv[~chosen])
    assert np.all(np.any(dv[chosen] != 0, axis=1))
    empty = idx[:, 0] == -1
    assert empty.any()
    assert not np.any(out["dq"].astype(np.float32)[empty])


def test_block_size_one_ignores_the_sparse_mode():
    case, attrs = make(block_size=1)
    causal = run_op(case, attrs)
    plain = run_op(case, dict(attrs, sparse_mode=0))
    for key in ("dq", "dk", "dv"):
        assert causal[key].tobytes() == plain[key].tobytes()


@pytest.mark.parametrize("blocks, masked_keys_zero", [([2, 3, 4], True), ([2, 3, 3, 4], False)])
def test_mode_three_masks_only_the_diagonal_block(blocks, masked_keys_zero):
    """Row 0 of a batch with Sq=20, Sk=80 sees keys <= 60. With blocks of 16, block 3 (48..63)
    straddles the diagonal and is masked past key 60; block 4 (64..79) lies wholly beyond it and
    is *not* masked. Of two copies of the diagonal block in one 512-key chunk only the last is."""
    case, attrs = make(q_lens=[20], kv_lens=[80], block_size=16, sparse_mode=3, nsel=2)
    idx = np.full((20, 1, 2048), -1, np.int32)
    idx[0, 0, : len(blocks)] = blocks
    case["sparseIndices"] = idx
    case["out"], case["softmaxMax"], case["softmaxSum"] = _forward(case, attrs)
    out = run_op(case, attrs)
    dk = out["dk"].reshape(80, -1).astype(np.float32)
    assert np.all(np.any(dk[32:61] != 0, axis=1))
    assert np.all(np.any(dk[64:] != 0, axis=1))
    assert (not np.any(dk[61:64])) == masked_keys_zero
    assert golden.precision_failures(out, case, attrs, "bf16") == []
    # the kernel's last selected block is not the diagonal one: reported
    assert [k for k, _ in sanitizer.reports()] == ["undefined-behaviour"]


def _forward(case, attrs, exact=False):
    """out, softmaxMax, softmaxSum of the case's indices: as the op takes them, or in float64."""
    f64 = lambda n: None if n not in case else case[n].astype(np.float64)
    out, smax, ssum = golden.forward(
        f64("query"),
        f64("key"),
        f64("value"),
        case["sparseIndices"],
        q_rope=f64("queryRope"),
        k_rope=f64("keyRope"),
        cu_q=case.get("actualSeqLengthsQuery"),
        cu_kv=case.get("actualSeqLengthsKv"),
        **attrs,
    )
    if exact:
        return out, smax, ssum
    return (
        out.reshape(case["out"].shape).astype(case["out"].dtype),
        smax.reshape(case["softmaxMax"].shape).astype(np.float32),
        ssum.reshape(case["softmaxSum"].shape).astype(np.float32),
    )


def test_tnd_offsets_are_cumulative():
    """Batch 1 of [3, 5] query rows owns rows 3..7 and keys 40..99 of cumulative [40, 100]."""
    case, attrs = make(q_lens=[3, 5], kv_lens=[40, 60], nsel=30)
    np.testing.assert_array_equal(case["actualSeqLengthsQuery"], [3, 8])
    out = run_op(case, attrs)
    assert golden.precision_failures(out, case, attrs, "bf16") == []
    dk = out["dk"].reshape(100, -1).astype(np.float32)
    batch0_keys = case["sparseIndices"].reshape(8, -1)[:3]
    chosen = np.unique(batch0_keys[batch0_keys >= 0])
    assert np.any(dk[chosen] != 0)


def test_int64_sequence_lengths_are_read_as_int32_words(capfd):
    """The sample's INT64 offsets: portability warning; with B = 1 the low words are the values."""
    case, attrs = make(q_lens=[12], kv_lens=[200], nsel=40)
    reference = run_op(case, attrs)
    case["actualSeqLengthsQuery"] = case["actualSeqLengthsQuery"].astype(np.int64)
    case["actualSeqLengthsKv"] = case["actualSeqLengthsKv"].astype(np.int64)
    lenient = run_op(case, attrs)
    assert "ACLNN_EMU_STRICT=1 returns 561003" in capfd.readouterr().err
    for key in ("dq", "dk", "dv"):
        assert lenient[key].tobytes() == reference[key].tobytes()


def test_out_of_range_index_is_reported_and_skipped():
    """Skipping the entry is the emulator's choice (the NPU reads outside the batch: undefined)."""
    case, attrs = make(q_lens=[4], kv_lens=[64], nsel=8)
    case["sparseIndices"][0, 0, 0] = 64  # one past the batch's keys
    out = run_op(case, attrs)
    assert [k for k, _ in sanitizer.reports()] == ["index-out-of-range"]
    assert golden.precision_failures(out, case, attrs, "bf16") == []  # golden drops it too


def test_descending_blocks_are_reported():
    """With block size 16 the NPU kernel assumes ascending blocks ending at the tail block."""
    case, attrs = make(q_lens=[4], kv_lens=[100], block_size=16, nsel=4)
    idx = np.full((4, 1, 2048), -1, np.int32)
    idx[:, 0, :3] = [6, 2, 0]  # tail block 6 first, then full blocks
    case["sparseIndices"] = idx
    run_op(case, attrs)
    assert [k for k, _ in sanitizer.reports()] == ["undefined-behaviour"]


def test_head_dims_outside_the_kernel_are_reported():
    case, attrs = make(q_lens=[4], kv_lens=[64], d=64, nsel=8)
    out = run_op(case, attrs)
    assert [k for k, _ in sanitizer.reports()] == ["undefined-behaviour"]
    assert golden.precision_failures(out, case, attrs, "bf16") == []


def test_workspace_size_follows_the_tiling():
    """Sample shape (TND, T1=1, N1=16, D=512, Dr=64, T2=2048): 32 MiB reserved, one core's gather
    and matmul buffers, fp32 dq/dk/dv."""
    from aclnn_emu.ops.sparse_attention.sparse_flash_attention_grad.checks import workspace_size
    from aclnn_emu.ops.sparse_attention.sparse_flash_attention_grad.launch import Plan
    from aclnn_emu.platform import part

    plan = Plan(
        "TND", b=1, s1=1, s2=2048, t1=1, t2=2048, g=16, d=512, dv=512, dr=64, scale=0.088, block_size=1, sparse_mode=0
    )
    gather = 512 * 576 * 2 * 3 + 512 * 512 * 2 * 2
    assert (
        workspace_size(plan, part("Ascend910B2"))
        == 32 * 2**20 + gather + 2 * 65536 + 16 * 576 * 4 + 2048 * 576 * 4 + 2048 * 512 * 4
    )


def test_torch_autograd_agrees():
    """The golden's exact mode is the autograd gradient of the forward; the op is within the
    hardware's rounding of it."""
    torch = pytest.importorskip("torch")
    case, attrs = make(block_size=16, sparse_mode=3, dr=64, duplicates=True, nsel=12)
    grads = _torch_grads(torch, case, attrs)
    out, smax, ssum = _forward(case, attrs, exact=True)  # unrounded statistics, as autograd has them
    exact = golden.golden_of(dict(case, out=out, softmaxMax=smax, softmaxSum=ssum), attrs)
    for key, value in grads.items():
        np.testing.assert_allclose(exact[key].reshape(value.shape), value, rtol=1e-9, atol=1e-12)
    out = run_op(case, attrs)
    for key, value in grads.items():
        x = out[key].astype(np.float64).reshape(value.shape)
        diff = 1 - 2 * (x * value).sum() / ((x * x).sum() + (value * value).sum())
        assert diff < 1e-4, key


def _torch_grads(torch, case, attrs):
    t = lambda n: torch.tensor(case[n].astype(np.float64), requires_grad=True)
    q, k, v, qr, kr = (t(n) for n in ("query", "key", "value", "queryRope", "keyRope"))
    qc = torch.cat([q, qr], -1).reshape(-1, q.shape[-2], q.shape[-1] + qr.shape[-1])
    kc = torch.cat([k, kr], -1).reshape(-1, k.shape[-1] + kr.shape[-1])
    vv, dout = (
        v.reshape(-1, v.shape[-1]),
        torch.tensor(case["dOut"].astype(np.float64)).reshape(qc.shape[0], -1, v.shape[-1]),
    )
    idx = case["sparseIndices"].reshape(qc.shape[0], -1)
    loss = 0
    for r, s1, sq, k0, sk in golden._rows(
        "TND", case["query"], case["actualSeqLengthsQuery"], case["actualSeqLengthsKv"], case["key"]
    ):
        pos, masked = golden.selection(idx[r], s1, sq, sk, attrs["block_size"], attrs["sparse_mode"] == 3)
        if len(pos):
            s = attrs["scale"] * qc[r] @ kc[k0 + pos].T
            s = s.masked_fill(torch.tensor(masked), float("-inf"))
            loss = loss + (torch.softmax(s, -1) @ vv[k0 + pos] * dout[r]).sum()
    loss.backward()
    return {
        "dq": q.grad.numpy(),
        "dk": k.grad.numpy(),
        "dv": v.grad.numpy(),
        "dq_rope": qr.grad.numpy(),
        "dk_rope": kr.grad.numpy(),
    }


# --- rounding-mode ties (tests/ties.py) --------------------------------------------------------


def tie_case(dtype, seed=0, t1=8, t2=16, g=4, d=128, top_k=2048):
    """TND inputs where P, dS and the output sums are exact in fp32 and P/dS land on midpoints:
    q[r, g] = c e_0 and key[:, 0] = 1 make every score of (r, g) c * scale, its softmaxMax, so
    P = 1/softmaxSum (ties.reciprocal_ties); dOut rows one-hot ±1, value entries ±2^k and out = 0
    make dS = P * dP a scaled tie where P is one (the ±1 in 4 columns, so that dv sums several).
    Rows select 6 keys with repeats."""
    rng = np.random.default_rng(seed)
    name = np.dtype(dtype).name
    scale = 0.5
    q = np.zeros((t1, g, d))
    q[..., 0] = rng.choice([-2.0, -1.0, 0.5, 1.0, 2.0], (t1, g))
    k = np.concatenate([np.ones((t2, 1, 1)), rng.integers(-3, 4, (t2, 1, d - 1))], axis=-1)
    v = rng.choice([-1.0, 1.0], (t2, 1, d)) * 2.0 ** rng.integers(-1, 2, (t2, 1, d))
    dout = np.zeros((t1, g, d))
    np.put_along_axis(dout, rng.integers(0, 4, (t1, g, 1)), rng.choice([-1.0, 1.0], (t1, g, 1)), -1)
    idx = np.full((t1, 1, top_k), -1, np.int32)
    idx[:, 0, :6] = rng.integers(0, t2, (t1, 6))
    case = dict(
        query=q.astype(dtype),
        key=k.astype(dtype),
        value=v.astype(dtype),
        dOut=dout.astype(dtype),
        out=np.zeros((t1, g, d), dtype),
        sparseIndices=idx,
        softmaxMax=(q[..., 0] * scale).astype(np.float32)[None],
        softmaxSum=ties.reciprocal_ties(rng, name, (1, t1, g)),
        actualSeqLengthsQuery=np.array([t1], np.int32),
        actualSeqLengthsKv=np.array([t2], np.int32),
    )
    attrs = dict(scale=scale, block_size=1, layout="TND", sparse_mode=0)

    def golden(modes):
        dt = name
        dq, dk, dv = np.zeros(q.shape), np.zeros(k.shape[::2]), np.zeros(v.shape[::2])
        for r in range(t1):
            keys = idx[r, 0, :6]
            p = np.repeat((np.float32(1) / case["softmaxSum"][0, r]).astype(np.float64)[:, None], 6, 1)  # [G, L]
            ds = ties.round_to(p * (dout[r] @ v[keys, 0].T), dt, modes["dS"])
            p_h = ties.round_to(p, dt, modes["P"])
            dq[r] = scale * ds @ k[keys, 0]
            np.add.at(dk, keys, scale * ds.T @ q[r])
            np.add.at(dv, keys, p_h.T @ dout[r])
        return {n: ties.to_output(x, dt, modes["out"]) for n, x in (("dq", dq), ("dk", dk), ("dv", dv))}

    return case, attrs, golden


@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, np.float16], ids=["bf16", "fp16"])
def test_p_ds_and_outputs_round_half_away_at_ties(dtype):
    """CAST_ROUND (half away from zero) of P, dS and the outputs dq/dk/dv."""
    case, attrs, golden = tie_case(dtype)
    want = ties.assert_sensitive(golden, {"P": "away", "dS": "away", "out": "away"}, "SFAG", finals=["out"])
    out = run_op(case, attrs)
    for name in want:
        ties.assert_bits(out[name].reshape(want[name].shape), want[name], name)
