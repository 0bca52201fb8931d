"""What each spec sample prints, from the goldens.

Each sample's inputs are rebuilt byte for byte as the sample makes them: a host vector of type T is
copied into a device allocation of numel(shape) * sizeof(T) bytes, and the tensor views the first
bytes of it in its own dtype (so a float vector of 1.0 read as fp16 holds 0, 1.875, 0, 1.875, ...).
The op's outputs (from tests/golden) overwrite the start of their allocations, and the lines are
rendered as the sample prints them: its host type reinterpreting the copied bytes, its printf format.

Lines that read past the end of an output's allocation show neighbouring device memory, whose
content is the emulator's choice (its arena layout), not a CANN fact: they are None and not compared.
Two samples print nothing a golden can predict: aclnnSparseFlashAttentionGrad passes a `short` to
`%e` (undefined behaviour: the value printed comes from a floating-point register, not the data), and
aclnnScatterPaKvCache_1 copies its 1-element host vectors into whole tensors (the device data is
host heap memory past the vectors). They map to None.
"""

import ml_dtypes
import numpy as np

from golden import flash_attention_score as fas
from golden import flash_attention_score_grad as fag
from golden import flash_attention_var_len as fvl
from golden import gather_pa_kv_cache as gather
from golden import incre_flash_attention as ifa
from golden import lightning_indexer as li
from golden import lightning_indexer_grad as lig
from golden import prompt_flash_attention as pfa
from golden import sparse_flash_attention as sfa
from golden.half import model_half_to_float

F16, F32, F64, U16, I16, I8, I32 = np.float16, np.float32, np.float64, np.uint16, np.int16, np.int8, np.int32
BF16 = ml_dtypes.bfloat16


def device(host_type, count, value, dtype, shape):
    """(allocation bytes, tensor view) of a std::vector<host_type>(count, value) copied to the device
    and viewed as ``dtype`` of ``shape``."""
    data = np.full(count, value, host_type).tobytes()
    return data, np.frombuffer(data, dtype)[: int(np.prod(shape))].reshape(shape)


def printed(allocation: bytes, output: np.ndarray, host_type, count: int, fmt: str, decode=None) -> list:
    """The lines a sample prints for `count` host_type values copied from an allocation whose start
    the op overwrote with `output` (`decode` converts them as the sample does before printing);
    None for values past the allocation."""
    data = output.tobytes() + allocation[output.nbytes :]
    size = np.dtype(host_type).itemsize
    inside = np.frombuffer(data[: len(data) // size * size], host_type)
    inside = inside if decode is None else decode(inside)
    return [fmt % (i, inside[i]) if i < len(inside) else None for i in range(count)]


def acl_half(bits):
    """aclFloat16 host values printed through aclFloat16ToFloat (CANN's decode: -inf prints as -65536)."""
    return model_half_to_float(bits.view(U16))


def flash_attention_score_grad():
    shape = (256, 1, 128)
    made = {n: device(F32, 32768, 1, F16, shape) for n in ("q", "k", "v", "dy", "o")}
    smax = np.full((1, 1, 256, 8), 3.0, F32)
    with np.errstate(over="ignore", invalid="ignore"):  # P = e^17 overflows fp16: inf, NaN, as on the NPU
        grads = fag.backward(
            *(made[n][1] for n in ("q", "k", "v", "dy", "o")),
            smax,
            smax,
            scale=0.088388,
            head_num=1,
            layout="SBH",
            dtype_name="float16",
            atten_mask=np.zeros((256, 256), np.uint8),
            sparse_mode=0,
            pre_tokens=65536,
            next_tokens=65536,
        )
    lines = []
    for g in grads:
        allocation, _ = device(F32, 32768, 0, F16, shape)
        out = fag.round_half_away(g, "float16").astype(F16)
        lines += printed(allocation, out, F32, 32768, "mean result[%d] is: %f")
    return lines


def gather_pa_kv_cache():
    key_cache = device(U16, 256, 1, F16, (2, 2, 32, 2))[1]
    value_cache = device(U16, 512, 1, F16, (2, 2, 32, 4))[1]
    key_alloc, key = device(U16, 768, 0, F16, (12, 32, 2))
    value = device(U16, 1536, 0, F16, (12, 32, 4))[1]
    tables, lens, offsets = np.ones((4, 6), np.int32), np.full(4, 3, np.int32), np.full(4, 2, np.int32)
    out_key, _ = gather.a2_norm(key_cache, value_cache, tables, lens, key, value, offsets, cumsum=False)
    return printed(key_alloc, out_key.view(U16), U16, 256, "result[%d] is: %d")


def lightning_indexer_grad():
    """aclFloat16 is uint16_t: the sample's 1.0 is the fp16 bit pattern 0x0001. The op reads dy and
    sparseIndices with row stride topK = dy's last dimension (128), so each row's 128 entries."""
    b, s1, s2, g, d = 2, 3, 2048, 64, 128
    q = device(U16, b * s1 * g * d, 1, F16, (b, s1, g, d))[1]
    k = device(U16, b * s2 * d, 1, F16, (b, s2, 1, d))[1]
    dy = device(U16, b * s1 * g * d, 1, F16, (b * s1 * g * d,))[1][: b * s1 * d].reshape(b, s1, d)
    idx = np.ones((b, s1, d), np.int32)
    w = device(U16, b * s1 * g, 1, F16, (b, s1, g))[1]
    dq, dk, dw = lig.reference(q, k, dy, idx, w, layout="BSND", sparse_mode=3)
    lines = []
    for out in (
        dq.astype(F16),
        fag.round_half_away(dk, "float16").astype(F16),
        fag.round_half_away(dw, "float16").astype(F16),
    ):  # dq RNE, dk and dweights CAST_ROUND
        allocation = device(U16, out.size, 1, F16, out.shape)[0]
        lines += printed(allocation, out, F32, 10, "mean result[%d] is: %f")
    return lines


def prompt_flash_attention():
    """The output buffer is read back as doubles: twice its allocation, whose second half holds the
    host's 1.0f floats; past that lies neighbouring memory."""
    q = device(F32, 32, 1, F16, (1, 2, 1, 16))[1]
    k = device(F32, 512, 1, F16, (1, 2, 16, 16))[1]
    v = device(F32, 512, 1, F16, (1, 2, 16, 16))[1]
    expected = pfa.attention(
        q, k, v, scale=1 / np.sqrt(16), pre=65535, nxt=65535, mask=np.zeros((1, 1, 16), bool), act_kv=[16]
    )
    allocation = device(F32, 32, 1, F16, (1, 2, 1, 16))[0]
    return printed(allocation, expected.astype(F16), F64, 32, "result[%d] is: %f")


def _pfa_from_ones(kv_len, scale):
    """(attentionOut's allocation, the fp16 output) of the BNSD PFA samples and example: query
    [1, 2, 1, 16], key/value [1, 2, kv_len, 16], fp16 from float 1.0s, no mask."""
    q = device(F32, 32, 1, F16, (1, 2, 1, 16))[1]
    k = device(F32, 32 * kv_len, 1, F16, (1, 2, kv_len, 16))[1]
    v = device(F32, 32 * kv_len, 1, F16, (1, 2, kv_len, 16))[1]
    out = pfa.attention(q, k, v, scale=scale, pre=65535, nxt=65535)
    return device(F32, 32, 1, F16, (1, 2, 1, 16))[0], out.astype(F16)


def prompt_flash_attention_v1_v3(kv_len, scale):
    """PromptFlashAttention V1 and V3 samples (V3 makes a mask and passes nullptr, innerPrecise 1);
    printed as op::fp16_t through std::cout (%g)."""
    return lambda: printed(*_pfa_from_ones(kv_len, scale), F16, 32, "index: %d: %g")


def incre_flash_attention_v1_v3():
    """IncreFlashAttention V1-V3 samples: BNSD decode over 16 keys, fp16 from float 1.0s, an INT8
    mask of zeros (nothing masked); printed through std::cout (%g)."""
    q = device(F32, 32, 1, F16, (1, 2, 1, 16))[1]
    k = device(F32, 512, 1, F16, (1, 2, 16, 16))[1]
    v = device(F32, 512, 1, F16, (1, 2, 16, 16))[1]
    mask = device(I8, 16, 0, I8, (1, 16))[1]
    out = ifa.attention(q[:, :, 0], list(k), list(v), scale=1 / np.sqrt(16), lengths=[16], mask=mask)
    allocation = device(F32, 32, 1, F16, (1, 2, 1, 16))[0]
    return printed(allocation, ifa.fp16_away(out).astype(F16), F16, 32, "index: %d: %g")


def cann_example_prompt_flash_attention():
    """ops-transformer's PFA example (it calls aclnnPromptFlashAttentionV3): the V3 sample's inputs,
    and the output's allocation (32 floats) read back whole as floats, so its first half shows the
    fp16 result in pairs (0, 1.875 -> 1.0f) and its second half the host's 1.0f values."""
    return printed(*_pfa_from_ones(2, 1 / np.sqrt(2)), F32, 32, "result[%d] is: %f")


def scatter_pa_kv_cache():
    """The sample prints its key input back (read as floats): the op must leave it alone."""
    allocation, key = device(I16, 128, 1, F16, (2, 2, 32))
    return printed(allocation, key, F32, 128, "result[%d] is: %f")


def flash_attention_score():
    """SBH [256, 1, 128] fp16 read from float 1.0s (0, 1.875, ...): every row alike, so each softmax
    is uniform. attentionOut's allocation (32768 floats of 0) is read back whole as floats: its
    first half holds the fp16 result in pairs, the rest stays 0."""
    shape = (256, 1, 128)
    q, k, v = (device(F32, 32768, 1, F16, shape)[1] for _ in range(3))
    out, smax, ssum, _ = fas.forward(
        q,
        k,
        v,
        scale=0.088388,
        head_num=1,
        layout="SBH",
        dtype_name="float16",
        atten_mask=np.zeros((256, 256), np.uint8),
        sparse_mode=0,
        pre_tokens=65536,
        next_tokens=65536,
    )
    fmt = "mean result[%d] is: %f"
    lines = printed(
        device(F32, 32768, 0, F16, shape)[0], fag.round_half_away(out, "float16").astype(F16), F32, 32768, fmt
    )
    for stat in (smax, ssum):
        lines += printed(device(F32, 2048, 3.0, F32, stat.shape)[0], stat.astype(F32), F32, 2048, fmt)
    return lines


# The FlashAttentionScore family's other samples: one sequence of 256 tokens, one head of D = 128 (SBH
# [256, 1, 128] or TND [256, 1, 128], the same memory), inputs from float vectors of 1.0 read as the
# tensor's dtype, a zero 256 x 256 mask (sparseMode 0), every output's allocation read back as floats.
SEQ, WIDTH, ROPE = 256, 128, 64
NAMES = {np.dtype(F16): "float16", np.dtype(BF16): "bfloat16", np.dtype(F32): "float32"}


def _narrow(x, dtype):
    return x.astype(F32) if dtype == F32 else fag.round_half_away(x, NAMES[np.dtype(dtype)]).astype(dtype)


def _attention_sample(dtype, scale=0.088388, sink=None, rope=False):
    """attentionOut, softmaxMax, softmaxSum as printed: the TND golden of one batch (cu = [256])."""
    shape = (SEQ, 1, WIDTH)
    q, k, v = (device(F32, SEQ * WIDTH, 1, dtype, shape)[1] for _ in range(3))
    halves = tuple(device(F32, SEQ * ROPE, 1, dtype, (SEQ, 1, ROPE))[1] for _ in range(2)) if rope else None
    # scale_value is a float attribute of the L0 op: the double the sample passes arrives as float32
    spec = dict(scale=float(F32(scale)), atten_mask=np.zeros((SEQ, SEQ), np.uint8), sparse_mode=0, pre_tokens=65536)
    out, row_max, row_sum, _ = fvl.forward(
        q,
        k,
        v,
        [SEQ],
        [SEQ],
        dtype_name=NAMES[np.dtype(dtype)],
        sink=sink,
        rope=halves,
        next_tokens=65536,
        prefix=None,
        **spec,
    )
    fmt = "mean result[%d] is: %f"
    lines = printed(device(F32, SEQ * WIDTH, 0, dtype, shape)[0], _narrow(out, dtype), F32, SEQ * WIDTH, fmt)
    for stat in (row_max, row_sum):
        lanes = np.repeat(stat[..., None], 8, axis=-1).astype(F32)
        lines += printed(device(F32, SEQ * 8, 3.0, F32, lanes.shape)[0], lanes, F32, SEQ * 8, fmt)
    return lines


def _gradient_sample(dtype, sink=None, rope=False, scale=0.088388):
    """dq (dqRope), dk (dkRope), dv (dsink) as printed: the TND golden backward of one batch with the
    sample's softmaxMax = softmaxSum = 3 and attentionIn, dy from float 1.0s."""
    shape = (SEQ, 1, WIDTH)
    made = {n: device(F32, SEQ * WIDTH, 1, dtype, shape)[1] for n in ("q", "k", "v", "dy", "o")}
    halves = tuple(device(F32, SEQ * ROPE, 1, dtype, (SEQ, 1, ROPE))[1] for _ in range(2)) if rope else None
    stats = np.full((SEQ, 1), 3.0)
    with np.errstate(over="ignore", invalid="ignore"):
        grads = fvl.backward(
            *(made[n] for n in ("q", "k", "v", "dy", "o")),
            stats,
            stats,
            [SEQ],
            [SEQ],
            dtype_name=NAMES[np.dtype(dtype)],
            sink=sink,
            rope=halves,
            scale=0.088388,
            atten_mask=np.zeros((SEQ, SEQ), np.uint8),
            sparse_mode=0,
            pre_tokens=65536,
            next_tokens=65536,
            prefix=None,
        )
    order = ("dq", "dq_rope", "dk", "dk_rope", "dv") if rope else ("dq", "dk", "dv")
    fmt, lines = "mean result[%d] is: %f", []
    for name in order:
        g = grads[name]
        lines += printed(device(F32, g.size, 0, dtype, g.shape)[0], _narrow(g, dtype), F32, g.size, fmt)
    if sink is not None:  # dsink sums 65536 fp32 terms and prints 13 digits: beyond fp32, not compared
        lines.append(None)
    return lines


def flash_attention_score_v3():
    """FLOAT SBH with a sink of 3 and scale 1/sqrt(128)."""
    return _attention_sample(F32, scale=1 / np.sqrt(128), sink=np.full(1, 3.0, F32))


def flash_attention_var_len_score_v3():
    """BF16 with rope halves [256, 1, 64] (float 1.0s read as bf16: 0, 1, 0, 1, ...)."""
    return _attention_sample(BF16, rope=True)


def flash_attention_var_len_score_v5():
    return _attention_sample(BF16, sink=np.full(1, 3.0, F32), rope=True)


def flash_attention_score_grad_v3():
    return _gradient_sample(F16, sink=np.zeros(1, F32))


def flash_attention_unpadding_score_grad_v3():
    return _gradient_sample(BF16, rope=True)


def incre_flash_attention():
    """BNSD decode, fp16 from float 1.0s; the INT8 mask of 1s masks both keys, so every score is
    -1e12 and the softmax uniform. Printed through std::cout (%g)."""
    q = device(F32, 32, 1, F16, (1, 2, 1, 16))[1]
    k = device(F32, 64, 1, F16, (1, 2, 2, 16))[1]
    v = device(F32, 64, 1, F16, (1, 2, 2, 16))[1]
    mask = device(I8, 2, 1, I8, (1, 2))[1]
    out = ifa.attention(q[:, :, 0], list(k), list(v), scale=1 / np.sqrt(2), lengths=[2], mask=mask)
    allocation = device(F32, 32, 1, F16, (1, 2, 1, 16))[0]
    return printed(allocation, ifa.fp16_away(out).astype(F16), F16, 32, "index: %d: %g")


def lightning_indexer():
    """BSND, one head, S1 = S2 = 2, causal; fp16 from float 1.0s, so the weights are 0 (row 0) and
    1.875 (row 1). Indices print as int32, scores through aclFloat16ToFloat."""
    q = device(F32, 256, 1, F16, (1, 2, 1, 128))[1]
    k = device(F32, 256, 1, F16, (1, 2, 1, 128))[1]
    w = device(F32, 2, 1, F16, (1, 2, 1))[1]
    indices, scores = li.reference(q, k, w, sparse_count=2048, sparse_mode=3)
    fmt = "mean result[%d] is: %"
    lines = printed(device(I32, 4096, 1, I32, (4096,))[0], indices, I32, 4096, fmt + "d")
    return lines + printed(
        device(F32, 4096, 1, F16, (4096,))[0], scores.astype(F16), U16, 4096, fmt + "f", decode=acl_half
    )


def sparse_flash_attention():
    """BSND MLA, S1 = S2 = 2, causal, sparseBlockSize 64: the indices (1) select block 1, keys 64..127,
    past every row's keys, so each row is 0. returnSoftmaxLse is false: softmaxMax/Sum keep the
    sample's float 1.0s, printed as aclFloat16 pairs (0, 1.875). Each print covers 32 halves."""
    q = device(F32, 1024, 1, F16, (1, 2, 1, 512))[1]
    k, v = (device(F32, 1024, 1, F16, (1, 2, 1, 512))[1] for _ in range(2))
    q_rope, k_rope = (device(F32, 128, 1, F16, (1, 2, 1, 64))[1] for _ in range(2))
    indices = device(I32, 4, 1, I32, (1, 2, 1, 2))[1]
    out, _, _ = sfa.reference(q, q_rope, k, k_rope, v, indices, scale=1 / np.sqrt(2), block_size=64, sparse_mode=3)
    fmt = "mean result[%d] is: %f"
    lines = printed(device(F32, 1024, 1, F16, out.shape)[0], out.astype(F16), U16, 32, fmt, decode=acl_half)
    unwritten = np.zeros(0, F32)
    for _ in ("softmaxMax", "softmaxSum"):
        lines += printed(device(F32, 32, 1, F32, (1, 2, 1, 16))[0], unwritten, U16, 32, fmt, decode=acl_half)
    return lines


EXPECTED = {
    "aclnnFlashAttentionScore": flash_attention_score,
    "aclnnFlashAttentionScoreGrad": flash_attention_score_grad,
    "aclnnFlashAttentionScoreGradV2": flash_attention_score_grad,
    "aclnnFlashAttentionScoreGradV3": flash_attention_score_grad_v3,
    "aclnnFlashAttentionScoreV2": flash_attention_score,
    "aclnnFlashAttentionScoreV3": flash_attention_score_v3,
    "aclnnFlashAttentionUnpaddingScoreGrad": lambda: _gradient_sample(F16),
    "aclnnFlashAttentionUnpaddingScoreGradV2": lambda: _gradient_sample(F16),
    "aclnnFlashAttentionUnpaddingScoreGradV3": flash_attention_unpadding_score_grad_v3,
    "aclnnFlashAttentionUnpaddingScoreGradV4": lambda: _gradient_sample(F16),
    "aclnnFlashAttentionUnpaddingScoreGradV5": lambda: _gradient_sample(F16, sink=np.zeros(1, F32)),
    "aclnnFlashAttentionVarLenScore": lambda: _attention_sample(F16),
    "aclnnFlashAttentionVarLenScoreV2": lambda: _attention_sample(F16),
    "aclnnFlashAttentionVarLenScoreV3": flash_attention_var_len_score_v3,
    "aclnnFlashAttentionVarLenScoreV4": lambda: _attention_sample(F16),
    "aclnnFlashAttentionVarLenScoreV5": flash_attention_var_len_score_v5,
    "aclnnGatherPaKvCache": gather_pa_kv_cache,
    "aclnnIncreFlashAttention": incre_flash_attention_v1_v3,
    "aclnnIncreFlashAttentionV2": incre_flash_attention_v1_v3,
    "aclnnIncreFlashAttentionV3": incre_flash_attention_v1_v3,
    "aclnnIncreFlashAttentionV4": incre_flash_attention,
    "aclnnLightningIndexer": lightning_indexer,
    "aclnnLightningIndexerGrad": lightning_indexer_grad,
    "aclnnPromptFlashAttention": prompt_flash_attention_v1_v3(16, 1 / np.sqrt(16)),
    "aclnnPromptFlashAttentionV2": prompt_flash_attention,
    "aclnnPromptFlashAttentionV3": prompt_flash_attention_v1_v3(2, 1 / np.sqrt(2)),
    "aclnnScatterPaKvCache": scatter_pa_kv_cache,
    "aclnnScatterPaKvCache_1": None,
    "aclnnSparseFlashAttention": sparse_flash_attention,
    "aclnnSparseFlashAttentionGrad": None,
}

# CANN's own examples (ops-transformer, relative to the repository root) -> what they print.
EXAMPLES = {
    "attention/prompt_flash_attention/examples/test_aclnn_prompt_flash_attention.cpp": (
        cann_example_prompt_flash_attention
    )
}
