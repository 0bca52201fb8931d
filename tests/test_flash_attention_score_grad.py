"""aclnnFlashAttentionScoreGradV2 numerics through the Python API, against the float64 golden
(tests/golden/flash_attention_score_grad.py) and torch.autograd, with CANN's precision standard."""

import numpy as np
import pytest

import aclnn_emu as ae
import precision
import ties
from aclnn_emu.kernels.casts import BF16, FP16, FP32, cast_round
from aclnn_emu.kernels.flash_attention.dropout import keep_mask, packed_keep_mask, philox_words
from golden import flash_attention_score_grad as golden

DTYPES = {"float16": FP16, "bfloat16": BF16, "float32": FP32}
INT32_MAX = 2147483647


def _inputs(rng, dtype, layout, b, n1, n2, s1, s2, d, dv=None):
    def make(n, s, width):
        return cast_round(golden.heads_back(rng.standard_normal((b, n, s, width)), layout), dtype)

    return make(n1, s1, d), make(n2, s2, d), make(n2, s2, dv or d), make(n1, s1, dv or d)


class Case:
    """One backward call: random inputs, the forward's softmax buffers and output, golden grads."""

    def __init__(
        self, dtype_name="float16", layout="BNSD", b=2, n1=2, n2=2, s1=48, s2=40, d=32, dv=None, seed=0, **attrs
    ):
        rng = np.random.default_rng(seed)
        self.dtype_name, self.dtype, self.layout, self.n1 = dtype_name, DTYPES[dtype_name], layout, n1
        self.q, self.k, self.v, self.dy = _inputs(rng, self.dtype, layout, b, n1, n2, s1, s2, d, dv)
        self.attrs = dict(scale=attrs.pop("scale", 1 / np.sqrt(d)), keep_prob=attrs.pop("keep_prob", 1.0), **attrs)
        if self.attrs["keep_prob"] < 1 and "drop_mask" not in self.attrs:
            bits = rng.random(b * n1 * s1 * s2) < self.attrs["keep_prob"]
            self.attrs["drop_mask"] = np.packbits(bits, bitorder="little")
        out, smax, ssum = golden.forward(self.q, self.k, self.v, head_num=n1, layout=layout, **self.attrs)
        self.out = cast_round(out, self.dtype)
        self.smax, self.ssum = smax.astype(np.float32), ssum.astype(np.float32)

    def golden(self, of=golden.backward):
        return of(
            self.q,
            self.k,
            self.v,
            self.dy,
            self.out,
            self.smax,
            self.ssum,
            head_num=self.n1,
            layout=self.layout,
            dtype_name=self.dtype_name,
            **self.attrs,
        )

    def floors(self):
        """Per element, the largest term of its sum (golden.largest_terms): precision's floor."""
        return self.golden(golden.largest_terms)

    def args(self, dq, dk, dv, dpse=None):
        a = self.attrs
        optional = [
            None if a.get(name) is None else ae.to_device(a[name]) for name in ("pse", "drop_mask", "atten_mask")
        ]
        return [
            ae.to_device(self.q),
            ae.to_device(self.k),
            ae.to_device(self.v),
            ae.to_device(self.dy),
            optional[0],
            optional[1],
            None,
            optional[2],
            ae.to_device(self.smax),
            ae.to_device(self.ssum),
            None,
            ae.to_device(self.out),
            a.get("prefix"),
            a.get("q_start_idx"),
            a.get("kv_start_idx"),
            float(a["scale"]),
            float(a["keep_prob"]),
            a.get("pre_tokens", INT32_MAX),
            a.get("next_tokens", INT32_MAX),
            self.n1,
            self.layout,
            0,
            a.get("sparse_mode", 0),
            a.get("pse_type", 1),
            dq,
            dk,
            dv,
            dpse,
        ]

    def run(self):
        outs = [
            ae.empty(
                x.shape,
                ae.DataType.ACL_FLOAT16
                if self.dtype == FP16
                else ae.DataType.ACL_BF16
                if self.dtype == BF16
                else ae.DataType.ACL_FLOAT,
            )
            for x in (self.q, self.k, self.v)
        ]
        ae.run("FlashAttentionScoreGradV2", *self.args(*outs))
        return [ae.numpy(t) for t in outs]


def assert_matches(case, got=None, want=None):
    got = case.run() if got is None else got
    want = case.golden() if want is None else want
    for name, a, g, floor in zip(("dq", "dk", "dv"), got, want, case.floors()):
        assert a.dtype == case.dtype
        failure = precision.failure(a, g, case.dtype_name, floor=floor)
        assert failure is None, f"{name}: {failure}"


@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize("layout", ["BSH", "SBH", "BSND", "BNSD"])
def test_layouts_and_dtypes(dtype_name, layout):
    assert_matches(Case(dtype_name, layout))


@pytest.mark.parametrize("layout", ["BSH", "BNSD"])
def test_gqa_sums_dk_dv_over_each_group(layout):
    assert_matches(Case("float16", layout, n1=6, n2=2, s1=33, s2=70, d=16))


def test_value_head_dim_smaller_than_query():
    assert_matches(Case("bfloat16", "BSND", d=32, dv=16))


MASK_2048 = np.triu(np.ones((2048, 2048), np.uint8), 1)
MASK_PREFIX = np.concatenate(
    [MASK_2048, np.concatenate([np.zeros((1024, 1024), np.uint8), np.ones((1024, 1024), np.uint8)], axis=1)]
)


@pytest.mark.parametrize("s1,s2", [(48, 40), (40, 72)])
@pytest.mark.parametrize(
    "mode,extra",
    [
        (0, {"pre_tokens": 20, "next_tokens": 3}),
        (1, {}),
        (2, {}),
        (3, {}),
        (4, {"pre_tokens": 9, "next_tokens": 5}),
        (5, {"prefix": (5, 30)}),
        (6, {"prefix": (5, 30)}),
    ],
)
def test_sparse_modes(mode, extra, s1, s2):
    rng = np.random.default_rng(mode)
    if mode in (0, 1, 5):
        mask = (rng.random((2, 1, s1, s2)) < 0.25).astype(np.uint8)
    else:
        mask = MASK_PREFIX if mode == 6 else MASK_2048
    assert_matches(Case("float16", "BNSD", s1=s1, s2=s2, sparse_mode=mode, atten_mask=mask, **extra))


def test_without_mask_the_sparse_mode_masks_nothing():
    """No attenMask: the tiling resets the tokens, so mode 3 and tokens 0/0 change nothing."""
    plain = Case("float32", "BNSD", s1=32, s2=48)
    assert_matches(
        Case("float32", "BNSD", s1=32, s2=48, sparse_mode=3, pre_tokens=0, next_tokens=0), want=plain.golden()
    )


def test_bool_mask_and_byte_values_other_than_one_mask_too():
    mask = np.random.default_rng(3).integers(0, 3, (48, 40)).astype(np.uint8) * 7
    assert_matches(Case("float16", "BSH", sparse_mode=1, atten_mask=mask))
    assert_matches(Case("float16", "BSH", sparse_mode=1, atten_mask=mask != 0))


def test_fully_masked_rows_use_the_given_max_and_sum():
    """A fully masked row has max -FLT_MAX and sum S2 in the forward: P is uniform, gradients flow."""
    mask = np.zeros((48, 40), np.uint8)
    mask[5] = 1
    mask[17:20] = 1
    case = Case("float16", "BNSD", sparse_mode=1, atten_mask=mask)
    assert np.all(case.smax[:, :, 5] == -np.finfo(np.float32).max)
    got = case.run()
    assert np.abs(got[0][:, :, 5].astype(np.float32)).max() > 0
    assert_matches(case, got)


@pytest.mark.parametrize(
    "pse_type,shape", [(1, (2, 2, 48, 40)), (1, (2, 2, 1, 40)), (0, (1, 2, 48, 40)), (0, (2, 2, 48, 40))]
)
def test_pse_tensor(pse_type, shape):
    pse = cast_round(np.random.default_rng(7).standard_normal(shape), FP16)
    assert_matches(Case("float16", "BNSD", pse=pse, pse_type=pse_type))


@pytest.mark.parametrize("pse_type", [2, 3])
@pytest.mark.parametrize("starts", [((), ()), ((3,), (11,)), (None, (11,))])
def test_inner_alibi_slopes(pse_type, starts):
    slopes = np.array([0.5, 0.125], np.float32)
    q_start, kv_start = starts
    assert_matches(
        Case(
            "bfloat16",
            "BSND",
            s1=40,
            s2=40,
            pse=slopes,
            pse_type=pse_type,
            q_start_idx=q_start or None,
            kv_start_idx=kv_start,
        )
    )


def test_inner_slopes_per_batch():
    slopes = np.array([[0.5, 0.25], [0.125, 1.0]], np.float32)
    assert_matches(Case("float32", "SBH", s1=24, s2=24, pse=slopes, pse_type=3))


def test_alibi_compressed_pse():
    s, n = 1040, 1
    rows = np.arange(s)[:, None] - np.arange(s)[None, :]
    alibi = -0.03 * np.abs(rows)[None, None, -1024:, :]
    case = Case(
        "float16",
        "BNSD",
        b=1,
        n1=n,
        n2=n,
        s1=s,
        s2=s,
        d=16,
        pse=cast_round(alibi, FP16),
        pse_type=1,
        sparse_mode=3,
        atten_mask=MASK_2048,
        pre_tokens=s,
        next_tokens=0,
    )
    assert_matches(case)


@pytest.mark.parametrize("dtype_name", DTYPES)
def test_dropout(dtype_name):
    assert_matches(Case(dtype_name, "BSH", s2=37, keep_prob=0.8))


def test_keep_prob_is_read_as_float32():
    """0.9 as float32 is 0.89999998: the factor is 1/0.89999998, not 1/0.9."""
    assert_matches(Case("float32", "BNSD", keep_prob=0.9, seed=5))


def test_softmax_lanes_that_differ_are_read_per_column():
    case = Case("float32", "BNSD", s2=20)
    rng = np.random.default_rng(1)
    case.smax = (case.smax + rng.random(case.smax.shape).astype(np.float32) * 0.1).astype(np.float32)
    assert_matches(case)


def test_empty_key_gives_zero_dq():
    q = np.ones((1, 2, 4, 8), np.float16)
    k = np.ones((1, 2, 0, 8), np.float16)
    smax = np.zeros((1, 2, 4, 8), np.float32)
    dq, dk, dv = (
        ae.to_device(np.full(q.shape, 5, np.float16)),
        ae.empty(k.shape, ae.DataType.ACL_FLOAT16),
        ae.empty(k.shape, ae.DataType.ACL_FLOAT16),
    )
    ae.run(
        "FlashAttentionScoreGradV2",
        ae.to_device(q),
        ae.to_device(k),
        ae.to_device(k),
        ae.to_device(q),
        None,
        None,
        None,
        None,
        ae.to_device(smax),
        ae.to_device(smax),
        None,
        ae.to_device(q),
        None,
        None,
        None,
        0.5,
        1.0,
        INT32_MAX,
        INT32_MAX,
        2,
        "BNSD",
        0,
        0,
        1,
        dq,
        dk,
        dv,
        None,
    )
    assert np.array_equal(ae.numpy(dq), np.zeros(q.shape, np.float16))


# attentionIn reaches the op rounded to fp16/bf16, while torch's backward uses its exact forward
# output in rowsum(dY * O); that input rounding alone moves fp16 gradients by a few 1e-3 (measured:
# the float64 golden fed the rounded O misses fp16's 1e-3 standard against torch by the same amount,
# fed the exact O it passes). So fp32 cases use CANN's fp32 standard, fp16/bf16 cases the standard
# of the next coarser format (bf16: four times its own).
SLOPES = np.array([0.5, 0.25, 0.125, 1.0], np.float32)


@pytest.mark.parametrize(
    "dtype_name,layout,attrs",
    [
        ("float32", "BNSD", {}),
        ("float32", "BSH", {"sparse_mode": 3, "atten_mask": MASK_2048}),
        ("float32", "BSND", {"keep_prob": 0.75}),
        ("float32", "SBH", {"pse_type": 0, "pse": np.linspace(-1, 1, 320).reshape(2, 4, 1, 40).astype(np.float32)}),
        ("float32", "BNSD", {"pse_type": 1, "pse": np.linspace(-2, 2, 12800).reshape(2, 4, 40, 40).astype(np.float32)}),
        ("float32", "BNSD", {"pse_type": 2, "pse": SLOPES, "q_start_idx": (2,), "kv_start_idx": (5,)}),
        ("float32", "BSH", {"pse_type": 3, "pse": SLOPES}),
        (
            "float32",
            "BNSD",
            {
                "sparse_mode": 0,
                "atten_mask": np.triu(np.ones((40, 40), np.uint8), 4),
                "pre_tokens": 40,
                "next_tokens": 3,
            },
        ),
        ("float32", "BNSD", {"sparse_mode": 2, "atten_mask": MASK_2048}),
        ("float32", "BNSD", {"sparse_mode": 4, "atten_mask": MASK_2048, "pre_tokens": 7, "next_tokens": 2}),
        ("float32", "BNSD", {"sparse_mode": 6, "atten_mask": MASK_PREFIX, "prefix": (9, 30)}),
        ("float16", "BSH", {"sparse_mode": 3, "atten_mask": MASK_2048}),
        ("float16", "BNSD", {"keep_prob": 0.75}),
        ("bfloat16", "BSND", {}),
    ],
)
def test_against_torch_autograd(dtype_name, layout, attrs):
    """torch.autograd of a float64 forward: S = QKᵀ·scale + pse (pseType 1: (QKᵀ + pse)·scale),
    masked scores = -FLT_MAX, softmax, dropout, P·V; GQA through repeated kv heads. The pse and
    masked sets of each head come from the golden's helpers (the parts under test are the gradients)."""
    pytest.importorskip("torch")
    case = Case(dtype_name, layout, n1=4, n2=2, s1=40, s2=40, **attrs)
    assert_matches_torch(case, case.run())


def assert_matches_torch(case, got):
    """`got` (dq, dk, dv) against torch.autograd on `case`, a case of B 2, N1 4, N2 2, S1 = S2 = 40."""
    import torch

    dtype_name, layout, a = case.dtype_name, case.layout, case.attrs
    q, k, v = (
        torch.tensor(golden.heads_first(x, layout, heads), requires_grad=True)
        for x, heads in ((case.q, 4), (case.k, 2), (case.v, 2))
    )
    kk, vv = k.repeat_interleave(2, dim=1), v.repeat_interleave(2, dim=1)
    heads = [(b, n) for b in range(2) for n in range(4)]
    pse = torch.tensor(
        np.stack(
            [
                golden.pse_matrix(
                    a.get("pse"), a.get("pse_type", 1), b, n, 40, 40, a.get("q_start_idx"), a.get("kv_start_idx")
                )
                * np.ones((40, 40))
                for b, n in heads
            ]
        ).reshape(2, 4, 40, 40)
    )
    masked = torch.tensor(
        np.stack(
            [
                golden.masked_set(
                    a.get("sparse_mode", 0),
                    a.get("atten_mask"),
                    b,
                    n,
                    40,
                    40,
                    a.get("pre_tokens", INT32_MAX),
                    a.get("next_tokens", INT32_MAX),
                    a.get("prefix"),
                )
                for b, n in heads
            ]
        ).reshape(2, 4, 40, 40)
    )
    qk = q @ kk.transpose(-1, -2)
    scores = (qk + pse) * a["scale"] if a.get("pse_type", 1) == 1 else qk * a["scale"] + pse
    probs = torch.softmax(scores.masked_fill(masked, -np.finfo(np.float32).max), dim=-1)
    if a["keep_prob"] < 1:
        bits = np.unpackbits(a["drop_mask"], count=2 * 4 * 40 * 40, bitorder="little").reshape(2, 4, 40, 40)
        probs = probs * torch.tensor(bits / float(np.float32(a["keep_prob"])))
    (probs @ vv).backward(torch.tensor(golden.heads_first(case.dy, layout, 4)))
    want = [golden.heads_back(t.grad.numpy(), layout) for t in (q, k, v)]
    for name, result, g in zip(("dq", "dk", "dv"), got, want):
        failure = precision.failure(
            result, g, dtype_name, bound=precision.TORCH_BOUND[dtype_name], floor=precision.torch_floor(g)
        )
        assert failure is None, f"{name}: {failure}"


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_arch35_generates_the_keep_mask_from_seed_and_offset(chip, capfd):
    """Ascend910_95 with dropout and no dropMask: the kernel's Philox keep-mask (seed 0, offset 0, as V2
    passes them; kernels/flash_attention/dropout.py), applied as a given dropMask would be, with a
    portability warning for the inferred byte order."""
    b, n1, s1, s2 = 2, 2, 48, 37
    mask = packed_keep_mask(0, 0, b * n1 * s1, s2, 0.8)
    case = Case("float16", "BSH", b=b, n1=n1, s1=s1, s2=s2, keep_prob=0.8, drop_mask=mask)
    want = case.golden()
    del case.attrs["drop_mask"]
    assert_matches(case, want=want)
    assert "portability: keepProb 0.8 with no dropMask" in capfd.readouterr().err


def test_the_generated_keep_mask_follows_philox_and_the_keep_rate():
    """Byte k of a counter's 7-round Philox output decides element k (the round function is checked
    against Random123's known answers in test_flash_attention_score.py); about keepProb are kept."""
    zero = np.zeros(3, np.uint64)
    words = philox_words((np.arange(3, dtype=np.uint64), zero, zero, zero), (7, 0))
    got = keep_mask(7, 0, 1, 40, 0.5)
    bytes_ = words.astype("<u4").view(np.uint8).reshape(-1)[:40]
    assert (got[0] == (bytes_ <= 127)).all()
    assert keep_mask(7, 16, 1, 40, 0.5)[0, :24].tolist() == got[0, 16:40].tolist()  # offset counts elements / 16
    assert abs(keep_mask(3, 0, 64, 1000, 0.9).mean() - 230 / 256) < 0.01


def _run_with(case, **changes):
    """case.run() with some arguments replaced (by name: inputLayout, attenMaskOptional)."""
    names = [
        "query",
        "keyIn",
        "value",
        "dy",
        "pseShiftOptional",
        "dropMaskOptional",
        "paddingMaskOptional",
        "attenMaskOptional",
        "softmaxMaxOptional",
        "softmaxSumOptional",
        "softmaxInOptional",
        "attentionInOptional",
        "prefixOptional",
        "qStartIdxOptional",
        "kvStartIdxOptional",
        "scaleValue",
        "keepProb",
        "preTokens",
        "nextTokens",
        "headNum",
        "inputLayout",
        "innerPrecise",
        "sparseMode",
        "pseType",
    ]
    outs = [ae.empty(x.shape, ae.DataType.ACL_FLOAT16) for x in (case.q, case.k, case.v)]
    args = case.args(*outs)
    for name, value in changes.items():
        args[names.index(name)] = value
    ae.run("FlashAttentionScoreGradV2", *args)
    return [ae.numpy(t) for t in outs]


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_arch35_applies_a_lone_q_start_idx_and_ignores_a_lone_kv_start_idx(chip):
    """..._regbase.cpp SetQKVStartIdx: qStartIdx alone applies (kvStartIdx read as 0); kvStartIdx is
    read only after a qStartIdx, so alone it does not apply (Atlas A2/A3: both or neither)."""
    slopes = np.array([0.5, 0.125], np.float32)
    lone_q = Case("float16", "BSND", s1=40, s2=40, pse=slopes, pse_type=2, q_start_idx=(3,), kv_start_idx=(0,))
    assert_matches(lone_q, got=_run_with(lone_q, kvStartIdxOptional=None))
    lone_kv = Case("float16", "BSND", s1=40, s2=40, pse=slopes, pse_type=2)
    assert_matches(lone_kv, got=_run_with(lone_kv, kvStartIdxOptional=(11,)))


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_arch35_reads_a_larger_mask_from_its_top_left_and_a_lower_case_layout_as_bsnd(chip):
    """..._regbase.cpp CheckAttenMaskShape (rows x columns >= S1 x S2) and GetShapeAttrsInfo (strcmp)."""
    s1, s2 = 48, 40
    mask = np.triu(np.ones((s1, s2), np.uint8), 3)
    case = Case("float16", "BSND", s1=s1, s2=s2, atten_mask=mask, pre_tokens=INT32_MAX, next_tokens=2)
    want = case.golden()
    larger = np.ones((s1 + 5, s2 + 7), np.uint8)
    larger[:s1, :s2] = mask
    assert_matches(case, got=_run_with(case, attenMaskOptional=ae.to_device(larger)), want=want)
    assert_matches(case, got=_run_with(case, inputLayout="bsnd"), want=want)


# --- rounding-mode ties (tests/ties.py) --------------------------------------------------------


class TieCase:
    """FAG inputs where P, dS and the outputs' sums are exact in fp32 and P/dS land on midpoints.

    Q[i] = q_i e_0 and K[:, 0] = 1 make every score of row i equal q_i * scale, the row's softmaxMax:
    P = 1/l per lane (ties.reciprocal_ties). dY rows are one-hot ±1 and V entries ±2^k, so dP = ±2^k and
    dS = P * dP (attentionIn = 0: D = 0) is a scaled tie where P is one. K's other columns and the
    GQA group make dq, dk and dv sums of several ties. With ``one_lane`` a row's eight lanes agree,
    so the kernel reads one statistic per row (and takes its shorter exponential) instead of one per lane."""

    def __init__(self, dtype_name, keep_prob, seed=0, s1=8, s2=16, d=8, n1=2, one_lane=False):
        rng = np.random.default_rng(seed)
        self.dtype_name, self.scale, self.keep_prob = dtype_name, 0.5, keep_prob
        dtype = DTYPES[dtype_name]
        self.q = np.zeros((1, n1, s1, d))
        self.q[..., 0] = rng.choice([-2.0, -1.0, 0.5, 1.0, 2.0], (1, n1, s1))
        self.k = np.concatenate([np.ones((1, 1, s2, 1)), rng.integers(-3, 4, (1, 1, s2, d - 1))], axis=-1)
        self.v = rng.choice([-1.0, 1.0], (1, 1, s2, d)) * 2.0 ** rng.integers(-1, 2, (1, 1, s2, d))
        self.dy = np.zeros((1, n1, s1, d))
        np.put_along_axis(self.dy, rng.integers(0, d, (1, n1, s1, 1)), rng.choice([-1.0, 1.0], (1, n1, s1, 1)), -1)
        self.smax = np.repeat((self.q[..., :1] * self.scale).astype(np.float32), 8, axis=-1)
        self.ssum = ties.reciprocal_ties(rng, dtype_name, (1, n1, s1, 1 if one_lane else 8))
        self.ssum = np.repeat(self.ssum, 8 // self.ssum.shape[-1], axis=-1)
        self.keep = np.ones((1, n1, s1, s2), bool) if keep_prob == 1 else rng.random((1, n1, s1, s2)) < 0.5
        self.inputs = [x.astype(dtype) for x in (self.q, self.k, self.v, self.dy)]

    def golden(self, modes):
        """dq, dk, dv with P, dS and the outputs rounded in ``modes`` (ties.MODES)."""
        dt = self.dtype_name
        lanes = np.arange(self.k.shape[2]) % 8
        p = (np.float32(1) / self.ssum[..., lanes]).astype(np.float64)  # [1, N1, S1, S2]
        factor = self.keep * np.float64(np.float32(1) / np.float32(self.keep_prob))
        pd = ties.round_to(p * factor, dt, modes["P"])
        dp = np.einsum("bnid,bjd->bnij", self.dy, self.v[:, 0]) * factor
        ds = ties.round_to(p * dp, dt, modes["dS"])
        dq = self.scale * np.einsum("bnij,bjd->bnid", ds, self.k[:, 0])
        dk = self.scale * np.einsum("bnij,bnid->bjd", ds, self.q)[:, None]
        dv = np.einsum("bnij,bnid->bjd", pd, self.dy)[:, None]
        return {name: ties.to_output(x, dt, modes["out"]) for name, x in (("dq", dq), ("dk", dk), ("dv", dv))}

    def run(self):
        dtype = ae.DataType.ACL_FLOAT16 if self.dtype_name == "float16" else ae.DataType.ACL_BF16
        q, k, v, dy = (ae.to_device(x) for x in self.inputs)
        outs = [ae.empty(x.shape, dtype) for x in self.inputs[:3]]
        drop = None if self.keep_prob == 1 else ae.to_device(np.packbits(self.keep.ravel(), bitorder="little"))
        ae.run(
            "FlashAttentionScoreGradV2",
            q,
            k,
            v,
            dy,
            None,
            drop,
            None,
            None,
            ae.to_device(self.smax),
            ae.to_device(self.ssum),
            None,
            ae.to_device(np.zeros(self.inputs[3].shape, self.inputs[3].dtype)),
            None,
            None,
            None,
            self.scale,
            self.keep_prob,
            INT32_MAX,
            INT32_MAX,
            self.q.shape[1],
            "BNSD",
            0,
            0,
            1,
            *outs,
            None,
        )
        return dict(zip(("dq", "dk", "dv"), (ae.numpy(t) for t in outs)))


@pytest.mark.parametrize("one_lane", [False, True])
@pytest.mark.parametrize("keep_prob", [1.0, 0.5])
@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
def test_p_ds_and_outputs_round_half_away_at_ties(dtype_name, keep_prob, one_lane):
    """CAST_ROUND (half away from zero) of P (dropped: P * keep / keepProb), of dS and of dq/dk/dv,
    with a statistic per lane and with one per row."""
    case = TieCase(dtype_name, keep_prob, one_lane=one_lane)
    want = ties.assert_sensitive(case.golden, {"P": "away", "dS": "away", "out": "away"}, "FAG", finals=["out"])
    got = case.run()
    for name in want:
        ties.assert_bits(got[name], want[name], name)


def test_the_scale_multiplies_the_fp32_scores_not_the_query():
    """S = fl(fl(q k) * scale), as the kernels' Muls after the cube: with softmaxMax set to that S
    and softmaxSum to an L whose fp32 1/L is the fp16 tie 1 + 2^-11, P is the tie and rounds away
    to 1 + 2^-10 in dV. Pre-scaling Q (fl(fl(q * scale) * k)) lands one ulp lower: P just below
    the tie, dV = 1."""
    q0, k0, scale = np.float16(5.2421875), np.float16(1.6572265625), np.float32(0.3)
    s_kernel = np.float32(np.float32(q0) * np.float32(k0)) * scale
    s_prescaled = np.float32(np.float32(q0) * scale) * np.float32(k0)
    assert s_prescaled < s_kernel, "the inputs must tell the two orders apart"
    total = np.float32(0.9995119)
    assert np.float32(1) / total == np.float32(1 + 2.0**-11)
    q, k = np.zeros((1, 1, 1, 16), np.float16), np.zeros((1, 1, 1, 16), np.float16)
    q[..., 0], k[..., 0] = q0, k0
    dy = np.ones((1, 1, 1, 16), np.float16)
    smax, ssum = np.full((1, 1, 1, 8), s_kernel, np.float32), np.full((1, 1, 1, 8), total, np.float32)
    outs = [ae.empty((1, 1, 1, 16), ae.DataType.ACL_FLOAT16) for _ in range(3)]
    ae.run(
        "FlashAttentionScoreGradV2",
        ae.to_device(q),
        ae.to_device(k),
        ae.to_device(np.zeros_like(k)),
        ae.to_device(dy),
        None,
        None,
        None,
        None,
        ae.to_device(smax),
        ae.to_device(ssum),
        None,
        ae.to_device(np.zeros_like(q)),
        None,
        None,
        None,
        float(scale),
        1.0,
        INT32_MAX,
        INT32_MAX,
        1,
        "BNSD",
        0,
        0,
        1,
        *outs,
        None,
    )
    assert np.all(ae.numpy(outs[2]) == np.float16(1 + 2.0**-10))
