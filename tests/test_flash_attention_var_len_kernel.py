"""The TND variable-length kernels (kernels/flash_attention/varlen.py), the learnable sink and the rope
split against the float64 reference (tests/golden/flash_attention_var_len.py), with CANN's precision
standard; softmaxMax/Sum in both layouts."""

import numpy as np
import pytest

import precision
import ties
from aclnn_emu.kernels.casts import BF16, FP16, cast_round
from aclnn_emu.kernels.flash_attention.flash_attention_score import flash_attention_score
from aclnn_emu.kernels.flash_attention.flash_attention_score_grad import flash_attention_score_grad, sink_gradient
from aclnn_emu.kernels.flash_attention.params import FaParams
from aclnn_emu.kernels.flash_attention.varlen import SAME_AS_INPUT, var_len_score, var_len_score_grad
from aclnn_emu.kernels.flash_attention.varlen_pse import PackedPse
from golden import flash_attention_score_grad as golden_dense
from golden import flash_attention_var_len as golden
from precision import TORCH_BOUND, torch_floor

DTYPES = {"float16": FP16, "bfloat16": BF16}
MASK_2048 = np.triu(np.ones((2048, 2048), np.uint8), 1)


class Case:
    """A packed batch: query lengths `lq`, key lengths `lk` (a 0 among them: an empty batch)."""

    def __init__(self, dtype_name="float16", lq=(5, 0, 37, 70), lk=(9, 4, 37, 53), n1=4, n2=2, d=32, dv=None, **kw):
        rng = np.random.default_rng(kw.pop("seed", 0))
        self.dtype_name, self.dtype = dtype_name, DTYPES[dtype_name]
        self.cu_q, self.cu_kv = np.cumsum(lq), np.cumsum(lk)
        t1, t2 = int(self.cu_q[-1]), int(self.cu_kv[-1])

        def make(*shape):
            return cast_round(rng.standard_normal(shape), self.dtype)

        self.q, self.k, self.v = make(t1, n1, d), make(t2, n2, d), make(t2, n2, dv or d)
        self.dy = make(t1, n1, dv or d)
        dr = kw.pop("rope_dim", 0)
        self.rope = (make(t1, n1, dr), make(t2, n2, dr)) if dr else None
        self.sink = None if not kw.pop("sink", False) else (rng.standard_normal(n1) * 2).astype(np.float32)
        self.layout = kw.pop("softmax_layout", "")
        self.mask = kw.pop("atten_mask", None)
        # (PackedPse, values, golden pse_terms) and the pseType
        self.pse = kw.pop("pse", None)
        pse_type = kw.pop("pse_type", 1)
        starts = kw.pop("starts", (None, None))
        keep_prob = kw.pop("keep_prob", 1.0)
        bits = n1 * sum(a * b for a, b in zip(lq, lk))
        drop = None if keep_prob == 1 else np.packbits(rng.random(bits) < keep_prob, bitorder="little")
        self.spec = dict(
            scale=1 / np.sqrt(d + dr),
            sparse_mode=kw.pop("sparse_mode", 0),
            pre_tokens=kw.pop("pre_tokens", 2147483647),
            next_tokens=kw.pop("next_tokens", 2147483647),
            prefix=kw.pop("prefix", None),
            drop_mask=drop,
            keep_prob=keep_prob,
            pse_type=pse_type,
            pse_terms=None if self.pse is None else self.pse[2],
            mask_row_stride=kw.pop("mask_row_stride", False),
        )
        self.lengths = (list(lq), list(lk))
        assert not kw, kw
        self.params = FaParams(
            scale=self.spec["scale"],
            keep_prob=keep_prob,
            head_num=n1,
            layout="TND",
            pre_tokens=self.spec["pre_tokens"],
            next_tokens=self.spec["next_tokens"],
            sparse_mode=self.spec["sparse_mode"],
            prefix=self.spec["prefix"],
            pse_type=pse_type,
            q_start_idx=starts[0],
            kv_start_idx=starts[1],
        )

    def batch_pse(self):
        if self.pse is None:
            return None
        return list(self.pse[0].batches(self.pse[1], *self.lengths))

    def forward(self):
        return var_len_score(
            self.q,
            self.k,
            self.v,
            self.params,
            self.cu_q,
            self.cu_kv,
            atten_mask=self.mask,
            drop_mask=self.spec["drop_mask"],
            sink=self.sink,
            rope=self.rope,
            softmax_layout=self.layout,
            pse=self.batch_pse(),
            mask_row_stride=self.spec["mask_row_stride"],
        )

    def golden_forward(self):
        return golden.forward(
            self.q,
            self.k,
            self.v,
            self.cu_q,
            self.cu_kv,
            dtype_name=self.dtype_name,
            sink=self.sink,
            rope=self.rope,
            atten_mask=self.mask,
            **self.spec,
        )

    def token_major(self, stats):
        """A [T1, N1, 8] buffer in this case's layout as [T1, N1] (lane 0), token-major."""
        if self.layout == SAME_AS_INPUT:
            return stats[..., 0]
        out = np.empty(stats.shape[:2], np.float32)
        flat, heads, start = stats.reshape(-1), stats.shape[1], 0
        for end in self.cu_q:
            rows = int(end) - start
            out[start:end] = flat[start * heads * 8 : int(end) * heads * 8].reshape(heads, rows, 8)[..., 0].T
            start = int(end)
        return out

    def backward(self, smax, ssum, out):
        return var_len_score_grad(
            self.q,
            self.k,
            self.v,
            self.dy,
            out,
            smax,
            ssum,
            self.params,
            self.cu_q,
            self.cu_kv,
            atten_mask=self.mask,
            drop_mask=self.spec["drop_mask"],
            sink=self.sink,
            rope=self.rope,
            softmax_layout=self.layout,
            pse=self.batch_pse(),
            mask_row_stride=self.spec["mask_row_stride"],
        )

    def golden_backward(self, smax, ssum, out, floors=False):
        return golden.backward(
            self.q,
            self.k,
            self.v,
            self.dy,
            out,
            self.token_major(smax),
            self.token_major(ssum),
            self.cu_q,
            self.cu_kv,
            dtype_name=self.dtype_name,
            sink=self.sink,
            rope=self.rope,
            atten_mask=self.mask,
            floors=floors,
            **self.spec,
        )


def check(case, backward=True):
    smax, ssum, out = case.forward()
    want_out, want_max, want_sum, floor = case.golden_forward()
    assert out.dtype == case.dtype
    failure = precision.failure(out, want_out, case.dtype_name, floor=floor)
    assert failure is None, f"attention_out: {failure}"
    lanes_equal = all((x == x[..., :1]).all() for x in (smax, ssum))
    assert lanes_equal
    valid = want_sum > 0  # rows of batches without keys are not written
    for name, got, want in (("max", smax, want_max), ("sum", ssum, want_sum)):
        precision.assert_meets(case.token_major(got)[valid], want[valid], "float32", f"softmax {name}")
    if not backward:
        return
    got = case.backward(smax, ssum, out)
    want = case.golden_backward(smax, ssum, out)
    floors = case.golden_backward(smax, ssum, out, floors=True)
    assert set(got) == set(want)
    for name in want:
        dtype = "float32" if name == "dsink" else case.dtype_name
        failure = precision.failure(got[name], want[name], dtype, floor=floors[name])
        assert failure is None, f"{name}: {failure}"


@pytest.mark.parametrize("dtype_name", DTYPES)
def test_packed_batches_without_mask(dtype_name):
    check(Case(dtype_name))


@pytest.mark.parametrize(
    "mode, attrs",
    [
        (2, {}),
        (3, {}),
        (4, dict(pre_tokens=20, next_tokens=3)),
        (6, dict(prefix=(2, 0, 9, 30))),
        (7, dict(next_tokens=4)),
        (8, dict(next_tokens=6)),
    ],
)
def test_sparse_modes_per_batch(mode, attrs):
    mask = MASK_2048 if mode != 6 else np.concatenate([MASK_2048, np.zeros((1024, 2048), np.uint8)])
    lq, lk = ((5, 0, 37, 70), (9, 4, 37, 73)) if mode in (3, 7, 6) else ((5, 0, 37, 70), (9, 4, 37, 53))
    check(Case("float16", lq=lq, lk=lk, sparse_mode=mode, atten_mask=mask, **attrs))


@pytest.mark.parametrize(
    "mode, lq, lk", [(7, (5, 0, 37, 70, 0), (9, 4, 37, 73, 6)), (8, (0, 5, 37, 40), (4, 9, 37, 53))]
)
def test_the_band_batch_is_chosen_by_query_lengths(mode, lq, lk):
    """bandIndex is the last (7) or first (8) batch whose query length is not 0, whatever its keys."""
    check(Case("float16", lq=lq, lk=lk, sparse_mode=mode, atten_mask=MASK_2048, next_tokens=5))


def test_user_mask_is_read_per_batch_top_left():
    rng = np.random.default_rng(3)
    mask = (rng.random((70, 73)) < 0.3).astype(np.uint8)
    mask[:, 0] = 0  # no row entirely masked
    check(Case("bfloat16", lq=(5, 0, 37, 70), lk=(9, 4, 37, 73), sparse_mode=1, atten_mask=mask))


def test_a_token_indexed_mask_is_read_at_each_batch_s_tokens():
    """A [T1, T2] mask (attenMaskTT): batch b reads rows and columns of its own tokens."""
    rng = np.random.default_rng(4)
    mask = (rng.random((112, 123)) < 0.3).astype(np.uint8)
    mask[:, [0, 9, 13, 50]] = 0  # every batch's first key stays visible
    check(Case("float16", lq=(5, 0, 37, 70), lk=(9, 4, 37, 73), sparse_mode=0, atten_mask=mask))


@pytest.mark.parametrize("heads", [1, 4])
def test_a_4d_mask_is_read_packed_batch_after_batch(heads):
    """[B, 1|N1, S1max, S2max] (attenMaskBS1S2 / BN2GS1S2 with TND): batch b reads [S1b, S2b] (per head)
    packed after the batches before it, not the top-left of its own [S1max, S2max] slab."""
    rng = np.random.default_rng(15)
    lq, lk = (5, 0, 37, 70), (9, 4, 37, 73)
    mask = (rng.random((4, heads, 70, 73)) < 0.3).astype(np.uint8)
    flat = mask.reshape(-1)
    start = 0
    for a, b in zip(lq, lk):  # every batch's (and head's) first key stays visible
        for _ in range(heads):
            if a and b:
                flat[start : start + a * b].reshape(a, b)[:, 0] = 0
            start += a * b
    check(Case("float16", lq=lq, lk=lk, sparse_mode=1, atten_mask=mask))


@pytest.mark.parametrize("heads", [1, 4])
def test_arch35_strides_a_4d_mask_s_rows_by_its_last_dimension(heads):
    """Ascend910_95 (arch35 ComputeOffsetForNoCompress): batch b starts at the same packed offset, but
    its row i is read i·S2max elements after it (attenMaskS2Size, the mask's last dimension), not i·S2b.
    Masking one element per batch that only this stride reads shows the difference."""
    rng = np.random.default_rng(17)
    lq, lk = (5, 0, 37, 70), (9, 4, 37, 73)
    mask = (rng.random((4, heads, 70, 73)) < 0.3).astype(np.uint8)
    flat, start = mask.reshape(-1), 0
    for a, b in zip(lq, lk):  # every batch's (and head's) first key stays visible, read with stride 73
        for _ in range(heads):
            for i in range(a if b else 0):
                flat[start + i * 73] = 0
            start += a * b
    case = Case("float16", lq=lq, lk=lk, n1=heads, n2=1, sparse_mode=1, atten_mask=mask, mask_row_stride=True)
    check(case)
    packed = Case("float16", lq=lq, lk=lk, n1=heads, n2=1, sparse_mode=1, atten_mask=mask)
    assert not np.array_equal(case.forward()[2], packed.forward()[2])


def test_arch35_reads_a_token_indexed_mask_top_left():
    """Ascend910_95: the arch35 kernels have no [T1, T2] read (the forward tiling's type 99 falls to
    attenMaskS1S2 in ComputeOffsetForNoCompress): every batch reads the top-left [S1b, S2b], rows T2
    apart, as for a [S1max, S2max] mask."""
    rng = np.random.default_rng(18)
    mask = (rng.random((112, 123)) < 0.3).astype(np.uint8)
    mask[:, 0] = 0
    lq, lk = (5, 0, 37, 70), (9, 4, 37, 73)
    case = Case("float16", lq=lq, lk=lk, sparse_mode=0, atten_mask=mask, mask_row_stride=True)
    check(case)
    tokens = Case("float16", lq=lq, lk=lk, sparse_mode=0, atten_mask=mask)
    assert not np.array_equal(case.forward()[2], tokens.forward()[2])


def test_arch35_reads_a_4d_mask_of_any_last_dimensions_strided():
    """Ascend910_95, the backward's masks: SetAttenMaskShapeType checks only dimensions 0 and 1, so a
    [B, 1, X, Y] mask of other last dimensions runs; batch b reads from its packed offset, rows Y apart
    (here Y = 80 > S2max and X < S1max), within the tensor."""
    rng = np.random.default_rng(19)
    lq, lk = (5, 0, 37, 70), (9, 4, 37, 73)
    mask = (rng.random((4, 1, 60, 80)) < 0.3).astype(np.uint8)
    flat, start = mask.reshape(-1), 0
    for a, b in zip(lq, lk):
        for i in range(a if b else 0):
            flat[start + i * 80] = 0
        start += a * b
    check(Case("float16", lq=lq, lk=lk, sparse_mode=1, atten_mask=mask, mask_row_stride=True))


def test_a_4d_mask_of_one_batch_and_head_is_read_top_left():
    rng = np.random.default_rng(16)
    mask = (rng.random((1, 1, 70, 73)) < 0.3).astype(np.uint8)
    mask[..., 0] = 0
    check(Case("bfloat16", lq=(5, 0, 37, 70), lk=(9, 4, 37, 73), sparse_mode=0, atten_mask=mask))


@pytest.mark.parametrize("sink", [False, True])
def test_dropout_bits_batch_after_batch(sink):
    """keepProb < 1: batch b's keep bits follow the N1·S1·S2 bits of the batches before it."""
    check(Case("float16", keep_prob=0.8, sink=sink, sparse_mode=3, atten_mask=MASK_2048, lk=(9, 4, 37, 73)))


def test_a_generated_keep_mask_draws_each_batch_from_its_aligned_offset():
    """Ascend910_95 draws the keep mask itself (dropmask.h): batch b's [N1·S1b, S2b] grid starts at
    element N1·Σ_{c<b} S1c·align16(S2c) of the Philox stream. The same bits given as a dropMask give
    the same outputs and gradients, bit for bit; the golden checks them against float64."""
    from dataclasses import replace

    from aclnn_emu.kernels.flash_attention.dropout import keep_mask

    lq, lk, heads, seed, offset = (5, 0, 37, 70), (9, 4, 37, 73), 4, 3, 32
    case = Case("float16", lq=lq, lk=lk, keep_prob=0.8, sparse_mode=3, atten_mask=MASK_2048)
    bits, start = [], 0
    for a, b in zip(lq, lk):
        bits.append(keep_mask(seed, offset + heads * start, heads * a, b, 0.8).reshape(-1))
        start += a * -(-b // 16) * 16
    case.spec["drop_mask"] = np.packbits(np.concatenate(bits), bitorder="little")
    generated = Case("float16", lq=lq, lk=lk, keep_prob=0.8, sparse_mode=3, atten_mask=MASK_2048)
    generated.spec["drop_mask"] = None
    generated.params = replace(generated.params, generated_dropout=(seed, offset))
    given, drawn = case.forward(), generated.forward()
    for x, y in zip(given, drawn):
        np.testing.assert_array_equal(x, y)
    grads, drawn_grads = case.backward(*given), generated.backward(*drawn)
    for name in grads:
        np.testing.assert_array_equal(grads[name], drawn_grads[name])
    check(case)


@pytest.mark.parametrize("dtype_name", DTYPES)
def test_sink_joins_each_softmax_row_and_dsink(dtype_name):
    check(Case(dtype_name, sink=True))


def test_sink_with_a_causal_mask_and_gqa():
    check(Case("bfloat16", n1=6, n2=2, sink=True, sparse_mode=3, atten_mask=MASK_2048, lk=(9, 4, 37, 73)))


def test_rope_split_forward_and_gradients():
    check(Case("bfloat16", d=64, rope_dim=32, sparse_mode=3, atten_mask=MASK_2048, lk=(9, 4, 37, 73)))


def test_rope_with_sink_and_token_major_softmax():
    check(Case("bfloat16", d=64, rope_dim=32, sink=True, softmax_layout=SAME_AS_INPUT))


def test_softmax_layouts_hold_the_same_values_transposed():
    default, token = Case("float16"), Case("float16", softmax_layout=SAME_AS_INPUT)
    a, b = default.forward(), token.forward()
    np.testing.assert_array_equal(a[2], b[2])
    for x, y in zip(a[:2], b[:2]):
        np.testing.assert_array_equal(default.token_major(x), token.token_major(y))
        assert not np.array_equal(x, y)  # the buffers differ: the layout is observable
    check(token)


def test_a_sink_of_minus_infinity_changes_nothing():
    case = Case("float16", sink=True)
    case.sink[:] = -np.inf
    plain = Case("float16")
    for got, want in zip(case.forward(), plain.forward()):
        np.testing.assert_array_equal(got, want)


def test_training_step_against_torch_autograd():
    """A packed causal step with sink and rope: the kernels' forward and backward against
    torch.autograd of a float64 forward written per batch (the sink a logit column with no value)."""
    torch = pytest.importorskip("torch")
    case = Case("bfloat16", d=64, rope_dim=32, sink=True, sparse_mode=3, atten_mask=MASK_2048, lk=(9, 4, 37, 73))
    smax, ssum, out = case.forward()
    got = case.backward(smax, ssum, out)
    leaves = {
        name: torch.tensor(np.asarray(x, np.float64), requires_grad=True)
        for name, x in (("q", case.q), ("k", case.k), ("v", case.v), ("qr", case.rope[0]), ("kr", case.rope[1]))
    }
    leaves["sink"] = torch.tensor(case.sink.astype(np.float64), requires_grad=True)
    g = case.q.shape[1] // case.k.shape[1]
    outs = []
    for (q0, q1), (k0, k1) in zip(golden.spans(case.cu_q), golden.spans(case.cu_kv)):
        if q1 == q0:
            continue
        q = torch.cat([leaves["q"][q0:q1], leaves["qr"][q0:q1]], -1).transpose(0, 1)
        k = torch.cat([leaves["k"][k0:k1], leaves["kr"][k0:k1]], -1).transpose(0, 1).repeat_interleave(g, 0)
        v = leaves["v"][k0:k1].transpose(0, 1).repeat_interleave(g, 0)
        s = q @ k.transpose(1, 2) * case.spec["scale"]
        i, j = torch.arange(q1 - q0)[:, None], torch.arange(k1 - k0)[None, :]
        s = s.masked_fill(j - i > (k1 - k0) - (q1 - q0), -torch.finfo(torch.float32).max)
        sink = leaves["sink"][:, None, None].expand(-1, q1 - q0, 1)
        p = torch.softmax(torch.cat([s, sink], -1), -1)[..., :-1]
        outs.append((p @ v).transpose(0, 1))
    (torch.cat(outs) * torch.tensor(np.asarray(case.dy, np.float64))).sum().backward()
    names = {"dq": "q", "dk": "k", "dv": "v", "dq_rope": "qr", "dk_rope": "kr", "dsink": "sink"}
    for name, leaf in names.items():
        dtype = "float32" if name == "dsink" else "bfloat16"
        want = leaves[leaf].grad.numpy()
        failure = precision.failure(got[name], want, dtype, bound=TORCH_BOUND[dtype], floor=torch_floor(want))
        assert failure is None, f"{name}: {failure}"


LQ, LK = (5, 0, 37, 70), (9, 4, 37, 53)


def _packed(form, dtype, heads=4, lq=LQ, lk=LK, seed=11):
    rows = form == "s1s2"
    count = heads * sum((a if rows else 1) * b for a, b in zip(lq, lk))
    values = cast_round(np.random.default_rng(seed).standard_normal((count, 1)) * 2, dtype)
    return PackedPse(form, heads), values, golden.packed_pse(values, heads, lq, lk, rows)


@pytest.mark.parametrize("form", ["s1s2", "1s2"])
@pytest.mark.parametrize("pse_type", [0, 1])
def test_packed_pse_is_read_batch_after_batch(form, pse_type):
    """A TND pse [N1·ΣS1b·S2b] or [N1·ΣS2b]: batch b's [N1, S1b|1, S2b] block follows the batches
    before it; pseType 1 adds it before the scale, 0 after."""
    check(Case("float16", pse=_packed(form, FP16), pse_type=pse_type, sparse_mode=2, atten_mask=MASK_2048))


def test_packed_pse_with_dropout_and_sink_bf16():
    pse = _packed("s1s2", BF16, lk=(9, 4, 37, 73))
    check(Case("bfloat16", pse=pse, keep_prob=0.8, sink=True, sparse_mode=3, atten_mask=MASK_2048, lk=(9, 4, 37, 73)))


def _alibi(dtype, batches, heads, width, seed=12):
    """A genuine ALiBi [P, N1, W, W] (-slope·|j - i| plus a per-head offset) and its compressed last 1024
    rows, the form the docs ask for."""
    rng = np.random.default_rng(seed)
    i, j = np.arange(width)[:, None], np.arange(width)[None, :]
    slopes = rng.random((batches, heads, 1, 1)) / 8
    full = cast_round(-slopes * np.abs(j - i) + rng.standard_normal((batches, heads, 1, 1)), dtype)
    compact = np.zeros((batches, heads, 1024, width), full.dtype)
    rows = min(width, 1024)
    compact[:, :, 1024 - rows :] = full[:, :, width - rows :]
    return compact, full


@pytest.mark.parametrize("batches", [1, 3])
@pytest.mark.parametrize("width", [40, 1100])
def test_alibi_compressed_pse_is_toeplitz_per_batch(batches, width):
    """[1|B, N1, 1024, maxS2]: each batch (S1b = S2b) reads the ALiBi of its own top-left block, row i
    at row 1024 - W + i of the compressed rows (above them, along the diagonal)."""
    lens = (width - 30, 0, width) if batches == 3 else (width - 30,)
    compact, full = _alibi(FP16, batches, 2, width)
    pse = (PackedPse("alibi", 2, alibi_batches=batches, alibi_width=width), compact, golden.full_pse(full))
    check(Case("float16", lq=lens, lk=lens, n1=2, n2=1, pse=pse, sparse_mode=2, atten_mask=MASK_2048))


@pytest.mark.parametrize("pse_type", [2, 3])
@pytest.mark.parametrize("per_batch", [False, True])
def test_generated_alibi_restarts_in_each_batch(pse_type, per_batch):
    rng = np.random.default_rng(13)
    slopes = (rng.random((4, 4) if per_batch else 4) / 4).astype(np.float32)
    pse = (PackedPse("slopes", 4, alibi_batches=4 if per_batch else 1), slopes, golden.slope_pse(slopes, pse_type, 3))
    check(Case("float16", pse=pse, pse_type=pse_type, starts=((2,), (5,)), sparse_mode=2, atten_mask=MASK_2048))


def test_generated_alibi_of_mode_8_shifts_only_the_first_batch():
    """Sparse mode 8: the start indices shift batch 0's distances; the later batches start at 0
    (innerAlibiFlag)."""
    lens = (9, 12, 30)
    slopes = (np.random.default_rng(14).random(4) / 4).astype(np.float32)
    pse = (PackedPse("slopes", 4), slopes, golden.slope_pse(slopes, 2, 2, restart_after_first=True))
    spec = dict(pse=pse, pse_type=2, starts=((1,), (3,)), sparse_mode=8, atten_mask=MASK_2048, next_tokens=0)
    check(Case("float16", lq=(11, 12, 30), lk=lens, **spec))


class RopeTieCase:
    """One query row over 8 keys whose scores are all c (q = 0; the rope halves give q_r·k_r,j = c):
    P = 1/8 exactly, o = 0 so D = 0, and dy = (1, 2^-8) makes dP_j = a_j ± 2^-8 for bf16 a_j in
    [1, 2): dS_j = dP_j / 8 is a bf16 tie, which the rope gradients dq_rope = Σ_j dS_j k_r,j and
    dk_rope,j = dS_j q_r carry (their own final narrowing is dq's and dk's, tied in
    test_flash_attention_score_grad.py)."""

    def __init__(self):
        rng = np.random.default_rng(7)
        self.q, self.k = np.zeros((1, 1, 16), BF16), np.zeros((8, 1, 16), BF16)
        self.v = np.zeros((8, 1, 16), BF16)
        self.v[:, 0, 0] = 1 + rng.integers(0, 128, 8) / 128
        self.v[:, 0, 1] = rng.choice([-1, 1], 8)
        self.dy = np.zeros((1, 1, 16), BF16)
        self.dy[0, 0, :2] = (1, 2.0**-8)
        self.dp = np.asarray(self.v[:, 0, 0], np.float64) + np.asarray(self.v[:, 0, 1], np.float64) * 2.0**-8
        self.qr = np.zeros((1, 1, 16), BF16)
        self.qr[0, 0, :2] = (1, 1 + 2.0**-7)
        self.kr = np.zeros((8, 1, 16), BF16)
        self.kr[:, 0, 0] = 0.5
        self.kr[:, 0, 2:] = rng.choice([-1, 1], (8, 14)) * 2.0 ** rng.integers(-3, 3, (8, 14))

    def golden(self, modes):
        ds = ties.round_to(self.dp / 8, "bfloat16", modes["dS"])
        kr, qr = np.asarray(self.kr[:, 0], np.float64), np.asarray(self.qr[0, 0], np.float64)
        return {
            "dq_rope": ties.to_output((ds[:, None] * kr).sum(axis=0), "bfloat16", "away"),
            "dk_rope": ties.to_output(ds[:, None] * qr[None, :], "bfloat16", "away"),
        }

    def run(self):
        params = FaParams(scale=1.0, keep_prob=1.0, head_num=1, layout="TND")
        c = np.float32(0.5)
        smax = np.full((1, 1, 8), c, np.float32)
        ssum = np.full((1, 1, 8), 8, np.float32)
        out = np.zeros((1, 1, 16), BF16)
        grads = var_len_score_grad(
            self.q, self.k, self.v, self.dy, out, smax, ssum, params, [1], [8], rope=(self.qr, self.kr)
        )
        return {"dq_rope": grads["dq_rope"][0, 0], "dk_rope": grads["dk_rope"][:, 0]}


def test_rope_gradients_round_half_away_at_ties():
    """CAST_ROUND of the dS the rope gradients dq_rope and dk_rope (bf16) are made of."""
    case = RopeTieCase()
    want = ties.assert_sensitive(case.golden, {"dS": "away"}, "rope")
    got = case.run()
    for name in want:
        ties.assert_bits(got[name], want[name], name)


def test_dsink_sums_the_dropped_dp():
    """Dense BNSD with dropout (V3's FlashAttentionScoreGrad path): each block's terms take dP after
    the keep factors, Σ_j P_ij dP_ij keep_ij / keepProb, as the SameAB template copies dP once dropped."""
    rng = np.random.default_rng(5)
    b, n, s1, s2, d, keep_prob = 1, 2, 40, 48, 16, 0.75
    q, k, v, dy = (cast_round(rng.standard_normal((b, n, s, d)), FP16) for s in (s1, s2, s2, s1))
    sink = rng.standard_normal(n).astype(np.float32)
    drop_mask = np.packbits(rng.random(b * n * s1 * s2) < keep_prob, bitorder="little")
    params = FaParams(scale=0.25, keep_prob=keep_prob, head_num=n, layout="BNSD")
    smax, ssum, out = flash_attention_score(q, k, v, params, drop_mask=drop_mask, sink=sink)
    *_, terms = flash_attention_score_grad(q, k, v, dy, out, smax, ssum, params, drop_mask=drop_mask, sink=sink)
    keep = golden_dense.drop_factors(drop_mask, keep_prob, b, n, s1, s2)[0]
    q64, k64, v64, dy64 = (np.asarray(x[0], np.float64) for x in (q, k, v, dy))
    want, floor = np.zeros(n), np.zeros(n)
    for h in range(n):
        mx, sm = np.asarray(smax[0, h, :, 0], np.float64), np.asarray(ssum[0, h, :, 0], np.float64)
        p = np.exp(q64[h] @ k64[h].T * 0.25 - mx[:, None]) / sm[:, None]
        terms64 = np.exp(float(sink[h]) - mx)[:, None] / sm[:, None] * p * (dy64[h] @ v64[h].T) * keep[h]
        want[h], floor[h] = -terms64.sum(), np.abs(terms64).sum()
    failure = precision.failure(sink_gradient([terms]), want, "float32", floor=floor)
    assert failure is None, failure
