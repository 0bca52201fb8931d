"""aclnnFlashAttentionScoreV2 numerics through the Python API, against the float64 golden
(tests/golden/flash_attention_score.py) with CANN's precision standard; the output rounding bit for
bit; and round trips: the emulator's forward then FlashAttentionScoreGradV2 against torch.autograd."""

import numpy as np
import pytest

import aclnn_emu as ae
import precision
import ties
from aclnn_emu.kernels.casts import BF16, FP16, FP32, cast_round
from golden import flash_attention_score as golden
from golden import flash_attention_score_grad as grad_golden

DTYPES = {"float16": FP16, "bfloat16": BF16, "float32": FP32}
ACL = {FP16: ae.DataType.ACL_FLOAT16, BF16: ae.DataType.ACL_BF16, FP32: ae.DataType.ACL_FLOAT}
INT32_MAX = 2147483647
FLT_MAX = float(np.finfo(np.float32).max)
MASK_2048 = np.triu(np.ones((2048, 2048), np.uint8), 1)
MASK_PREFIX = np.concatenate(
    [MASK_2048, np.concatenate([np.zeros((1024, 1024), np.uint8), np.ones((1024, 1024), np.uint8)], axis=1)]
)


def forward(q, k, v, *, head_num, layout, inner_precise=0, **attrs):
    """Both phases of the forward; (softmax_max, softmax_sum, attention_out) as numpy."""
    dtype, axes = q.dtype, layout.upper()  # 9.1.0 accepts lower-case layouts
    b_axis = 1 if axes == "SBH" else 0
    s1 = q.shape[{"BSH": 1, "SBH": 0, "BSND": 1, "BNSD": 2}[axes]]
    lanes = (q.shape[b_axis], head_num, s1, 8)
    out_shape = list(q.shape)
    if axes in ("BSH", "SBH"):
        out_shape[2] = head_num * (v.shape[2] * (q.shape[2] // head_num) // k.shape[2])
    else:
        out_shape[3] = v.shape[3]
    smax, ssum, out = (
        ae.empty(lanes, ae.DataType.ACL_FLOAT),
        ae.empty(lanes, ae.DataType.ACL_FLOAT),
        ae.empty(out_shape, ACL[np.dtype(dtype)]),
    )
    optional = [None if attrs.get(n) is None else ae.to_device(attrs[n]) for n in ("pse", "drop_mask", "atten_mask")]
    ae.run(
        "FlashAttentionScoreV2",
        ae.to_device(q),
        ae.to_device(k),
        ae.to_device(v),
        optional[0],
        optional[1],
        None,
        optional[2],
        attrs.get("prefix"),
        attrs.get("q_start_idx"),
        attrs.get("kv_start_idx"),
        float(attrs["scale"]),
        float(attrs.get("keep_prob", 1.0)),
        attrs.get("pre_tokens", INT32_MAX),
        attrs.get("next_tokens", INT32_MAX),
        head_num,
        layout,
        inner_precise,
        attrs.get("sparse_mode", 0),
        attrs.get("pse_type", 1),
        smax,
        ssum,
        None,
        out,
    )
    return ae.numpy(smax), ae.numpy(ssum), ae.numpy(out)


class Case:
    """Random inputs of one forward call and its attributes."""

    def __init__(
        self, dtype_name="float16", layout="BNSD", b=2, n1=2, n2=2, s1=48, s2=40, d=32, dv=None, seed=0, **attrs
    ):
        rng = np.random.default_rng(seed)
        self.dtype_name, self.dtype, self.layout, self.n1 = dtype_name, DTYPES[dtype_name], layout, n1

        def make(n, s, width):
            return cast_round(grad_golden.heads_back(rng.standard_normal((b, n, s, width)), layout), self.dtype)

        self.q, self.k, self.v = make(n1, s1, d), make(n2, s2, d), make(n2, s2, dv or d)
        self.attrs = dict(scale=attrs.pop("scale", 1 / np.sqrt(d)), keep_prob=attrs.pop("keep_prob", 1.0), **attrs)
        if self.attrs["keep_prob"] < 1 and "drop_mask" not in self.attrs:
            bits = rng.random(b * n1 * s1 * s2) < self.attrs["keep_prob"]
            self.attrs["drop_mask"] = np.packbits(bits, bitorder="little")

    def run(self, inner_precise=0):
        return forward(
            self.q, self.k, self.v, head_num=self.n1, layout=self.layout, inner_precise=inner_precise, **self.attrs
        )

    def golden(self, invalid_line=False):
        return golden.forward(
            self.q,
            self.k,
            self.v,
            head_num=self.n1,
            layout=self.layout,
            dtype_name=self.dtype_name,
            invalid_line=invalid_line,
            **self.attrs,
        )


def assert_matches(case, inner_precise=0, invalid_line=False, reference=None):
    """The emulator against the golden, which takes `reference`'s attributes over the case's."""
    smax, ssum, out = case.run(inner_precise)
    attrs = case.attrs
    case.attrs = {**attrs, **(reference or {})}
    g_out, g_max, g_sum, floor = case.golden(invalid_line)
    case.attrs = attrs
    assert out.dtype == case.dtype and smax.dtype == ssum.dtype == np.float32
    assert np.all(smax == smax[..., :1]) and np.all(ssum == ssum[..., :1]), "the 8 lanes are replicated"
    failure = precision.failure(out, g_out, case.dtype_name, floor=floor)
    assert failure is None, f"attentionOut: {failure}"
    # max and sum are fp32 on every dtype (the scores of fp16/bf16 inputs are exact products in fp32)
    for name, got, want in (("softmaxMax", smax, g_max), ("softmaxSum", ssum, g_sum)):
        failure = precision.failure(got, want, "float32", bound=1e-5 if case.dtype == FP32 else 1e-4)
        assert failure is None, f"{name}: {failure}"
    return smax, ssum, out


@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize("layout", ["BSH", "SBH", "BSND", "BNSD"])
def test_layouts_and_dtypes(dtype_name, layout):
    assert_matches(Case(dtype_name, layout))


@pytest.mark.parametrize("layout", ["BSH", "BNSD"])
def test_gqa_reads_kv_head_n_over_g(layout):
    assert_matches(Case("float16", layout, n1=6, n2=2, s1=33, s2=700, d=16))


def test_value_head_dim_smaller_than_query():
    assert_matches(Case("bfloat16", "BSND", d=32, dv=16))


def test_long_rows_span_several_key_blocks():
    """S2 = 1300 crosses the kernel's key blocks: the running max rescales the earlier ones."""
    assert_matches(Case("float16", "BNSD", b=1, n1=1, n2=1, s1=70, s2=1300, d=64))


@pytest.mark.parametrize("s1,s2", [(48, 40), (40, 72)])
@pytest.mark.parametrize(
    "mode,extra",
    [
        (0, {"pre_tokens": 20, "next_tokens": 3}),
        (1, {}),
        (2, {}),
        (3, {}),
        (4, {"pre_tokens": 9, "next_tokens": 5}),
        (5, {"prefix": (40, 40)}),
        (6, {"prefix": (35, 40)}),
    ],
)
def test_sparse_modes(mode, extra, s1, s2):
    rng = np.random.default_rng(mode)
    if mode in (0, 1, 5):
        mask = (rng.random((2, 1, s1, s2)) < 0.25).astype(np.uint8)
    else:
        mask = MASK_PREFIX if mode == 6 else MASK_2048
    # Where the band leaves rows without keys, the tiling turns the invalid-line mode on: mode 3 with
    # S1 > S2, mode 4 when its left-up next token (next + S2 - S1) is negative.
    invalid = (mode == 3 and s1 > s2) or (mode == 4 and extra["next_tokens"] + s2 - s1 < 0)
    assert_matches(
        Case("float16", "BNSD", s1=s1, s2=s2, sparse_mode=mode, atten_mask=mask, **extra), invalid_line=invalid
    )


def test_without_mask_the_sparse_mode_masks_nothing():
    plain = Case("float32", "BNSD", s1=32, s2=48).run()
    moded = Case("float32", "BNSD", s1=32, s2=48, sparse_mode=3, pre_tokens=0, next_tokens=0).run()
    for a, b in zip(plain, moded):
        assert np.array_equal(a, b)


def test_fully_masked_rows_average_v_with_sum_s2():
    """Not in the invalid-line mode: max -FLT_MAX, every key P = 1, sum = S2, output = mean of V."""
    mask = np.zeros((48, 40), np.uint8)
    mask[5] = 1
    smax, ssum, out = assert_matches(Case("float32", "BNSD", sparse_mode=1, atten_mask=mask))
    assert np.all(smax[:, :, 5] == -FLT_MAX) and np.all(ssum[:, :, 5] == 40)


def test_inner_precise_2_zeroes_fully_masked_rows():
    """innerPrecise 2 (read as its low byte, so 258 too): output 0, sum FLT_MAX."""
    mask = np.zeros((48, 40), np.uint8)
    mask[5] = 1
    case = Case("float16", "BSND", sparse_mode=1, atten_mask=mask)
    for inner in (2, 258):
        smax, ssum, out = assert_matches(case, inner_precise=inner, invalid_line=True)
        assert np.all(out[:, 5] == 0) and np.all(ssum[:, :, 5] == FLT_MAX) and np.all(smax[:, :, 5] == -FLT_MAX)


def test_fully_masked_rows_average_all_keys_when_the_band_narrows_the_block():
    """A row masked everywhere by attenMask inside a band that leaves its row block (the kernel's
    ROW_BLOCK) only part of the keys: still P = 1 on every one of the S2 keys (sum S2), as the
    backward assumes."""
    from aclnn_emu.kernels.flash_attention import flash_attention_score as kernel

    s = 2 * kernel.ROW_BLOCK + 100  # the middle row block sees keys near its rows only
    row = kernel.ROW_BLOCK + 50
    mask = np.zeros((s, s), np.uint8)
    mask[row] = 1
    smax, ssum, out = assert_matches(
        Case("float32", "BNSD", b=1, n1=1, n2=1, s1=s, s2=s, d=16, atten_mask=mask, pre_tokens=10, next_tokens=10)
    )
    assert np.all(smax[0, 0, row] == -FLT_MAX) and np.all(ssum[0, 0, row] == s)


def test_rows_without_a_key_in_their_band_are_invalid_lines():
    """S1 > S2 + preTokens: rows from S2 on have no key in their band (the tiling then takes the
    invalid-line path), also in row blocks whose band holds no key at all: output 0, max -FLT_MAX,
    sum FLT_MAX."""
    from aclnn_emu.kernels.flash_attention import flash_attention_score as kernel

    s1 = 2 * kernel.ROW_BLOCK + 44  # the later row blocks hold no key in their band
    case = Case(
        "float32",
        "BNSD",
        b=1,
        n1=1,
        n2=1,
        s1=s1,
        s2=100,
        d=16,
        atten_mask=np.zeros((s1, 100), np.uint8),
        pre_tokens=0,
        next_tokens=0,
    )
    smax, ssum, out = assert_matches(case, invalid_line=True)
    assert np.all(out[0, 0, 100:] == 0) and np.all(smax[0, 0, 100:] == -FLT_MAX) and np.all(ssum[0, 0, 100:] == FLT_MAX)


@pytest.mark.parametrize(
    "pse_type,shape", [(1, (2, 2, 48, 40)), (1, (2, 2, 1, 40)), (0, (1, 2, 48, 40)), (0, (2, 2, 48, 40))]
)
def test_pse_tensor(pse_type, shape):
    pse = cast_round(np.random.default_rng(7).standard_normal(shape), FP16)
    assert_matches(Case("float16", "BNSD", pse=pse, pse_type=pse_type))


@pytest.mark.parametrize("pse_type", [2, 3])
@pytest.mark.parametrize("starts", [((), ()), ((3,), (11,)), (None, (11,)), ((3,), None)])
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


def test_start_indices_apply_only_together():
    slopes = np.array([0.5, 0.125], np.float32)
    alone = Case("float32", "BNSD", s1=24, s2=24, pse=slopes, pse_type=2, q_start_idx=(3,)).run()
    none = Case("float32", "BNSD", s1=24, s2=24, pse=slopes, pse_type=2).run()
    both = Case("float32", "BNSD", s1=24, s2=24, pse=slopes, pse_type=2, q_start_idx=(3,), kv_start_idx=(0,)).run()
    assert np.array_equal(alone[2], none[2]) and not np.array_equal(both[2], none[2])


def test_alibi_compressed_pse():
    s = 1040
    rows = np.arange(s)[:, None] - np.arange(s)[None, :]
    alibi = -0.03 * np.abs(rows)[None, None, -1024:, :]
    assert_matches(
        Case(
            "float16",
            "BNSD",
            b=1,
            n1=1,
            n2=1,
            s1=s,
            s2=s,
            d=16,
            pse=cast_round(alibi, FP16),
            pse_type=1,
            sparse_mode=3,
            atten_mask=MASK_2048,
        )
    )


@pytest.mark.parametrize("dtype_name", DTYPES)
def test_dropout(dtype_name):
    assert_matches(Case(dtype_name, "BSH", s2=37, keep_prob=0.8))


@pytest.mark.parametrize("dtype_name,step", [("float16", 2.0**-10), ("bfloat16", 2.0**-7)])
def test_output_rounds_ties_away_from_zero(dtype_name, step):
    """q = 0: every key gets P = 1 (exact), so O = (v0 + v1) / 2 exactly in fp32; v0, v1 one step
    apart put O on the midpoint. CAST_ROUND takes the larger magnitude, CAST_RINT the even one."""
    dtype = DTYPES[dtype_name]
    q = np.zeros((1, 1, 2, 8), dtype)
    k = np.zeros((1, 1, 2, 8), dtype)
    base = np.array([1.0, -1.0, 1.5, -1.5, 2.0, -2.0, 1.25, -1.25])
    ulp = 2.0 ** np.floor(np.log2(np.abs(base))) * step  # the spacing at each value (even mantissas)
    v = np.stack([base, base + np.sign(base) * ulp]).astype(dtype)[None, None]
    _, _, out = forward(q, k, v, head_num=1, layout="BNSD", scale=1.0)
    midpoint = (v[0, 0, 0].astype(np.float64) + v[0, 0, 1].astype(np.float64)) / 2
    want = grad_golden.round_half_away(midpoint, dtype_name).astype(dtype)
    assert not np.array_equal(want, midpoint.astype(dtype)), "the case must separate the two roundings"
    assert np.array_equal(out[0, 0, 0].view(np.uint16), want.view(np.uint16))
    assert np.array_equal(out[0, 0, 1].view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
def test_P_rounds_ties_away_from_zero(dtype_name):
    """Row i scores key 0 at 0 (the max) and key 1 at y_i, whose fp32 exp is a midpoint of the
    dtype: P = (1, CAST_ROUND(e_i)), V = (0, 1), so O = P_1 / (1 + e_i) shows the rounding of P."""
    dtype = DTYPES[dtype_name]
    y, e = ties.exp_ties(np.random.default_rng(11), dtype, 32)
    q, key = ties.dot_terms(y, dtype, 16)
    k = np.stack([np.zeros(16, dtype), key])[None, None]
    v = np.stack([np.zeros(16), np.ones(16)]).astype(dtype)[None, None]
    smax, ssum, out = forward(q[None, None], k, v, head_num=1, layout="BNSD", scale=1.0)

    def golden_out(modes):
        return {"out": ties.two_key_output(e, dtype, modes["P"], "away")}

    want = ties.assert_sensitive(golden_out, {"P": "away"}, "attentionOut")
    ties.assert_bits(out[0, 0], np.repeat(want["out"][:, None], 16, axis=1), "attentionOut")
    assert np.all(smax == 0) and np.array_equal(ssum[0, 0, :, 0], (1 + e).astype(np.float32))


@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
def test_dropped_P_rounds_ties_away_from_zero(dtype_name):
    """q = 0: every E is 1, and with every bit kept P = CAST_ROUND(1 / keepProb), keepProb chosen so
    that its fp32 reciprocal is the midpoint 1 + 2**-digits; one key, V = 3: O = 3 P."""
    dtype = DTYPES[dtype_name]
    digits = ties.FORMATS[dtype_name][0]
    factor = 1 + 2.0**-digits
    keep_prob = np.float32(1 / factor)
    assert np.float32(1) / keep_prob == factor, "the reciprocal must land on the midpoint"
    q, k, v = np.zeros((1, 1, 8, 16), dtype), np.zeros((1, 1, 1, 16), dtype), np.full((1, 1, 1, 16), 3, dtype)
    keep_all = np.packbits(np.ones(8, bool), bitorder="little")
    _, _, out = forward(q, k, v, head_num=1, layout="BNSD", scale=1.0, keep_prob=float(keep_prob), drop_mask=keep_all)

    def golden_out(modes):
        return {"out": ties.round_to(3 * ties.round_to(factor, dtype, modes["P"]), dtype, "away")}

    want = ties.assert_sensitive(golden_out, {"P": "away"}, "attentionOut")
    ties.assert_bits(out, np.full(out.shape, want["out"]), "attentionOut")


def test_empty_key_zeroes_every_output():
    q = np.ones((1, 2, 4, 8), np.float16)
    k = np.ones((1, 2, 0, 8), np.float16)
    outs = [
        ae.to_device(np.full(shape, 5, dt))
        for shape, dt in (((1, 2, 4, 8), np.float32), ((1, 2, 4, 8), np.float32), (q.shape, np.float16))
    ]
    ae.run(
        "FlashAttentionScoreV2",
        ae.to_device(q),
        ae.to_device(k),
        ae.to_device(k),
        None,
        None,
        None,
        None,
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
        outs[0],
        outs[1],
        None,
        outs[2],
    )
    for t in outs:
        assert not ae.numpy(t).any()


# -- Ascend910_95: the kernel's own keep mask --------------------------------------------------------
def test_philox_matches_the_random123_known_answers():
    """philox_words is Philox4x32 (the kernel runs it with 7 rounds; the published answers are for 10)."""
    from aclnn_emu.kernels.flash_attention.dropout import philox_words

    cases = [
        ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
        (
            (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
            (0xA4093822, 0x299F31D0),
            (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
        ),
        ((0xFFFFFFFF,) * 4, (0xFFFFFFFF, 0xFFFFFFFF), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ]
    for counter, key, want in cases:
        assert tuple(int(w) for w in philox_words([[c] for c in counter], key, rounds=10)[0]) == want


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_arch35_generates_the_keep_mask_from_seed_and_offset(chip, capfd):
    """keepProb < 1 and no dropMask on Ascend910_95: the kernel draws its mask (seed 0, offset 0 in V2):
    element e of [B, N1, S1, S2] is kept when byte e % 16 of the 7-round Philox output for counter
    e // 16 is <= int(keepProb * 255) (S2 a multiple of 16). The same bits given as dropMask on the
    default chip give the same output; a portability warning names the inferred step."""
    from aclnn_emu.kernels.flash_attention.dropout import keep_mask

    case = Case("float16", "BNSD", s1=24, s2=32, keep_prob=0.8)
    del case.attrs["drop_mask"]
    bits = keep_mask(0, 0, 2 * 2 * 24, 32, 0.8).reshape(-1)
    assert 0.7 < bits.mean() < 0.9
    case.attrs["drop_mask"] = np.packbits(bits, bitorder="little")
    golden_out, _, _, floor = case.golden()
    del case.attrs["drop_mask"]
    _, _, out = case.run()
    assert precision.failure(out, golden_out, "float16", floor=floor) is None
    assert "portability: keepProb 0.8 with no dropMask" in capfd.readouterr().err  # the lane order is inferred


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize(
    "pse_type,s1,starts,reference",
    [
        (2, 24, {}, {}),  # S1 != S2
        (3, 24, {"q_start_idx": (2,), "kv_start_idx": (7,)}, {}),
        (2, 40, {"q_start_idx": (3,)}, {"kv_start_idx": (0,)}),  # qStartIdx alone
        (3, 56, {"kv_start_idx": (5,)}, {"q_start_idx": (0,)}),  # kvStartIdx alone
    ],
)
def test_arch35_inner_pse_takes_unequal_lengths_and_either_start_index(chip, pse_type, s1, starts, reference):
    """The arch35 Basic template's SetPseAlibiParamsRegbase returns before any check for pseType 2/3, so
    S1 != S2 runs; SetQKVStartIdx (arch35) reads each start index on its own (absent = 0), and the
    kernel's distance is j + kvStartIdx - i - qStartIdx (pse.h ComputeInnerPseOffset), in fp32."""
    case = Case("float16", "BNSD", s1=s1, s2=40, pse_type=pse_type, pse=SLOPES[:2], **starts)
    assert_matches(case, reference=reference)


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_arch35_runs_pse_type_0_without_pse_as_no_pse(chip):
    """The arch35 AnalyzePseOptionalInput has no "pse is nullptr but pseType is not 1" check."""
    assert_matches(Case("bfloat16", "BSH", s1=40, s2=24, pse_type=0))


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
def test_arch35_an_empty_value_takes_the_empty_input_tiling(chip):
    """IsEmptyInputRegbase counts value too: Dv = 0 zero-fills softmaxMax and softmaxSum."""
    q, k = np.ones((1, 2, 4, 8), np.float16), np.ones((1, 2, 6, 8), np.float16)
    v = np.ones((1, 2, 6, 0), np.float16)
    smax, ssum = (ae.to_device(np.full((1, 2, 4, 8), 5, np.float32)) for _ in range(2))
    out = ae.empty((1, 2, 4, 0), ae.DataType.ACL_FLOAT16)
    ae.run(
        "FlashAttentionScoreV2",
        ae.to_device(q),
        ae.to_device(k),
        ae.to_device(v),
        None,
        None,
        None,
        None,
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
        smax,
        ssum,
        None,
        out,
    )
    assert not ae.numpy(smax).any() and not ae.numpy(ssum).any()


@pytest.mark.parametrize("chip", ["Ascend910_95", "Ascend910B"], indirect=True)
def test_the_arch35_output_cast_saturates_where_atlas_a2_overflows(chip):
    """The arch35 output cast is castTraitZero (vf_basic_block_utils.h: CAST_ROUND, SatMode::SAT): an
    fp16 result beyond 65504 becomes 65504 there, inf on Atlas A2 (IEEE). Uniform scores and dropout
    with keepProb 0.5 make each output 60000 x 2 x (kept keys / 16); the same keep bits on both chips
    (generated on arch35, given as dropMask on A2)."""
    from aclnn_emu.kernels.flash_attention.dropout import keep_mask

    rng = np.random.default_rng(4)
    q = np.zeros((2, 2, 16, 16), np.float16)
    k = rng.standard_normal((2, 2, 16, 16)).astype(np.float16)
    v = np.full((2, 2, 16, 16), 60000, np.float16)
    bits = np.packbits(keep_mask(0, 0, 2 * 2 * 16, 16, 0.5).reshape(-1), bitorder="little")
    attrs = dict(scale=0.25, keep_prob=0.5)
    g_out, _, _, floor = golden.forward(
        q, k, v, head_num=2, layout="BNSD", dtype_name="float16", drop_mask=bits, **attrs
    )
    assert (g_out > 65520).any() and (g_out < 65504).any()
    a2 = chip == "Ascend910B"
    _, _, out = forward(q, k, v, head_num=2, layout="BNSD", drop_mask=bits if a2 else None, **attrs)
    want = np.where(g_out > 65520, np.inf if a2 else 65504, g_out)
    assert np.array_equal(np.isinf(out), np.isinf(want))
    finite = np.isfinite(want)
    assert precision.failure(out[finite], want[finite], "float16", floor=floor[finite]) is None


# -- round trips: forward, then FlashAttentionScoreGradV2, against torch.autograd -------------------
def _torch():
    return pytest.importorskip("torch")


TORCH_BOUND = {"float32": 1e-4, "float16": 4e-3, "bfloat16": 1.6e-2}  # as in test_flash_attention_score_grad
SLOPES = np.array([0.5, 0.25, 0.125, 1.0], np.float32)


def _backward(case, smax, ssum, out, dy):
    a = case.attrs
    grads = [ae.empty(x.shape, ACL[case.dtype]) for x in (case.q, case.k, case.v)]
    optional = [None if a.get(n) is None else ae.to_device(a[n]) for n in ("pse", "drop_mask", "atten_mask")]
    ae.run(
        "FlashAttentionScoreGradV2",
        ae.to_device(case.q),
        ae.to_device(case.k),
        ae.to_device(case.v),
        ae.to_device(dy),
        optional[0],
        optional[1],
        None,
        optional[2],
        ae.to_device(smax),
        ae.to_device(ssum),
        None,
        ae.to_device(out),
        a.get("prefix"),
        a.get("q_start_idx"),
        a.get("kv_start_idx"),
        float(a["scale"]),
        float(a["keep_prob"]),
        a.get("pre_tokens", INT32_MAX),
        a.get("next_tokens", INT32_MAX),
        case.n1,
        case.layout,
        0,
        a.get("sparse_mode", 0),
        a.get("pse_type", 1),
        *grads,
        None,
    )
    return [ae.numpy(t) for t in grads]


@pytest.mark.parametrize(
    "dtype_name,layout,attrs",
    [
        ("float32", "BNSD", {}),
        ("float32", "BSH", {"sparse_mode": 3, "atten_mask": MASK_2048}),
        ("float32", "BSND", {"keep_prob": 0.75}),
        ("float32", "SBH", {"pse_type": 0, "pse": np.linspace(-1, 1, 320).reshape(2, 4, 1, 40).astype(np.float32)}),
        ("float32", "BNSD", {"pse_type": 2, "pse": SLOPES, "q_start_idx": (2,), "kv_start_idx": (5,)}),
        ("float32", "BSH", {"pse_type": 3, "pse": SLOPES, "sparse_mode": 2, "atten_mask": MASK_2048, "keep_prob": 0.9}),
        ("float16", "BSH", {"sparse_mode": 3, "atten_mask": MASK_2048, "keep_prob": 0.8}),
        ("float16", "BNSD", {"pse_type": 1, "pse": cast_round(np.linspace(-2, 2, 12800).reshape(2, 4, 40, 40), FP16)}),
        # bf16 without a causal mask: a causal first row has one key, where exact maths gives dS = 0 but
        # rowsum(dY * O) with O rounded to bf16 (as the backward receives it) leaves ~1e-2 of dP
        ("bfloat16", "BSND", {"keep_prob": 0.75}),
    ],
)
def test_round_trip_matches_torch_autograd(dtype_name, layout, attrs):
    """GQA (4 query heads on 2 kv heads) throughout; the forward's outputs feed the backward as they are."""
    case = Case(dtype_name, layout, n1=4, n2=2, s1=40, s2=40, **attrs)
    bits = case.attrs.get("drop_mask") if case.attrs["keep_prob"] < 1 else None
    _assert_round_trip(case, bits)


@pytest.mark.parametrize("chip", ["Ascend910_95"], indirect=True)
@pytest.mark.parametrize("dtype_name,layout", [("float32", "BNSD"), ("float16", "BSH"), ("bfloat16", "BSND")])
def test_arch35_round_trip_drops_the_same_elements_both_ways(chip, dtype_name, layout):
    """keepProb < 1 and no dropMask on Ascend910_95: the forward and FlashAttentionScoreGradV2 each
    generate the keep mask (dropmask.h, seed 0 and offset 0 from both V2 entry points), so the pair
    matches torch.autograd of one dropout with that mask."""
    from aclnn_emu.kernels.flash_attention.dropout import packed_keep_mask

    case = Case(dtype_name, layout, n1=4, n2=2, s1=40, s2=40, keep_prob=0.8)
    del case.attrs["drop_mask"]
    _assert_round_trip(case, packed_keep_mask(0, 0, 2 * 4 * 40, 40, 0.8))


def _assert_round_trip(case, bits):
    """The emulator's forward and backward of `case` against torch.autograd, with the keep bits `bits`
    (packed, or None without dropout) in the reference."""
    torch = _torch()
    dtype_name, layout = case.dtype_name, case.layout
    dy = cast_round(
        grad_golden.heads_back(np.random.default_rng(9).standard_normal((2, 4, 40, 32)), layout), case.dtype
    )
    smax, ssum, out = case.run()
    got = _backward(case, smax, ssum, out, dy)

    a = case.attrs
    q, k, v = (
        torch.tensor(grad_golden.heads_first(x, layout, heads), requires_grad=True)
        for x, heads in ((case.q, 4), (case.k, 2), (case.v, 2))
    )
    kk, vv = k.repeat_interleave(2, dim=1), v.repeat_interleave(2, dim=1)
    heads = [(b, n) for b in range(2) for n in range(4)]
    pse = torch.tensor(
        np.stack(
            [
                grad_golden.pse_matrix(
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
                grad_golden.masked_set(
                    a.get("sparse_mode", 0), a.get("atten_mask"), b, n, 40, 40, INT32_MAX, INT32_MAX, a.get("prefix")
                )
                for b, n in heads
            ]
        ).reshape(2, 4, 40, 40)
    )
    qk = q @ kk.transpose(-1, -2)
    scores = (qk + pse) * a["scale"] if a.get("pse_type", 1) == 1 else qk * a["scale"] + pse
    probs = torch.softmax(scores.masked_fill(masked, -FLT_MAX), dim=-1)
    if bits is not None:
        keep = np.unpackbits(bits, count=2 * 4 * 40 * 40, bitorder="little").reshape(2, 4, 40, 40)
        probs = probs * torch.tensor(keep / float(np.float32(a["keep_prob"])))
    o = probs @ vv
    o.backward(torch.tensor(grad_golden.heads_first(dy, layout, 4)))
    want_out = grad_golden.heads_back(o.detach().numpy(), layout)
    failure = precision.failure(
        out, want_out, dtype_name, bound=TORCH_BOUND[dtype_name], floor=float(np.abs(want_out).mean())
    )
    assert failure is None, f"attentionOut: {failure}"
    for name, g, t in zip(("dq", "dk", "dv"), got, (q, k, v)):
        want = grad_golden.heads_back(t.grad.numpy(), layout)
        failure = precision.failure(
            g, want, dtype_name, bound=TORCH_BOUND[dtype_name], floor=max(float(np.abs(want).mean()), 1e-300)
        )
        assert failure is None, f"{name}: {failure}"


@pytest.mark.parametrize("version", ["8.5.0", "9.0.0", "9.1.0"])
def test_key_rank_unlike_the_layout_per_release(monkeypatch, version):
    """A BNSD call with a 3-D key is 161002 in every release; on Atlas A2/A3, 9.1.0's V2 refuses it in ShapeCheck
    (aclnnFlashAttentionScoreV2GetWorkspaceSize, aclnn_flash_attention_score.cpp), before AnalysisAxis."""
    from aclnn_emu.pytest_plugin import select

    select(monkeypatch, cann_version=version, soc="Ascend910B")
    q = np.zeros((1, 1, 4, 8), np.float16)
    with pytest.raises(ae.AclnnError) as error:
        forward(q, q[0], q, head_num=1, layout="BNSD", scale=1.0)
    assert error.value.code == 161002
    assert ("query or key Invalid layout" in str(error.value)) == (version == "9.1.0"), str(error.value)


def test_lower_case_layout_runs_as_upper_case_in_9_1(monkeypatch):
    """9.1.0 AnalysisAxis upper-cases inputLayout and hands the L0 call the upper-case layout: 'sbh' gives SBH's
    bytes (before 9.1.0 it is 161002)."""
    from aclnn_emu.pytest_plugin import select

    rng = np.random.default_rng(33)
    q, k, v = (rng.standard_normal(shape).astype(np.float16) for shape in ((6, 2, 32), (9, 2, 16), (9, 2, 16)))
    select(monkeypatch, cann_version="9.1.0")
    upper = forward(q, k, v, head_num=2, layout="SBH", scale=0.25)
    lower = forward(q, k, v, head_num=2, layout="sbh", scale=0.25)
    assert all(x.tobytes() == y.tobytes() for x, y in zip(upper, lower))
    select(monkeypatch, cann_version="9.0.0")
    with pytest.raises(ae.AclnnError) as error:
        forward(q, k, v, head_num=2, layout="sbh", scale=0.25)
    assert error.value.code == 161002


@pytest.mark.parametrize("entry", ["FlashAttentionScore", "FlashAttentionScoreV2"])
def test_query_out_dtype_check_of_9_1_is_v2_and_v3_only(monkeypatch, entry):
    """9.1.0's InputOutputDtypeCheck (DAV_2201) sits in aclnnFlashAttentionScoreV2GetWorkspaceSize and V3's only:
    V1 with an fp32 attentionOut for an fp16 query still runs (the cast inferred), V2 returns 161002."""
    from aclnn_emu.pytest_plugin import select

    select(monkeypatch, cann_version="9.1.0", soc="Ascend910B")
    q = np.full((1, 4, 2, 16), 0.5, np.float16)
    lanes = [ae.empty((1, 2, 4, 8), ae.DataType.ACL_FLOAT) for _ in range(2)]
    out = ae.empty(q.shape, ae.DataType.ACL_FLOAT)
    starts = [None, None] if entry.endswith("V2") else []
    pse_type = [1] if entry.endswith("V2") else []
    args = [ae.to_device(q), ae.to_device(q), ae.to_device(q), None, None, None, None, None, *starts]
    args += [0.25, 1.0, INT32_MAX, INT32_MAX, 2, "BSND", 0, 0, *pse_type, *lanes, None, out]
    if entry.endswith("V2"):
        with pytest.raises(ae.AclnnError) as error:
            ae.run(entry, *args)
        assert error.value.code == 161002
    else:
        ae.run(entry, *args)
        assert np.allclose(ae.numpy(out), 0.5)
