"""The A2/A3 PFA MSD kernels (prompt_flash_attention_s1s2_bns1_x910.h with msdMode MSD_ON): an INT8
key/value beside an fp16/bf16 query of at most 16 rows, with separate key/value antiquant
parameters. Both products run on the cube in int8: each fp32 operand row is split into two int8
pieces and the int32 products are recombined in fp32 on the vector unit.

Splitting a row x (MsdMatmulPreProcess / MsdAIterExpand, fp32 vector steps):
  amax = max |x|;  a = x * fp32(127.49 / amax)        (the softmax side: amax = 1, a = x * 127.49)
  A1 = round(a);  A2 = round(fp32(a - A1) * 254.98)   round: CAST_ROUND, half away from zero,
                                                      then exact casts through fp16 to int8
Recombining (MsdMatmulResCombine): R = fp32(fp32(C1) + fp32(fp32(C2) * fp32(1 / 254.98))) * fp32(1 / 127.49)
with C_p = A_p . y the exact int32 products.

Per channel (modes 0: BF16 scales [N2, D], read in the query dtype):
  scores  S = R(pieces of q * scaleK) * amax          the key offset is a row constant: not applied
  values  O_block = R(pieces of P, amax 1)            P the fp32 softmax numerator
  output  O = (acc / l + offsetV) * scaleV            Bmm2UpdateDivPerchannel, then CAST_ROUND
Per token (modes 1: FLOAT [B2, S2] scales and offsets per key row j):
  scores  S_j = (R(pieces of q) * amax + offsetK_j * sum(q)) * scaleK_j
  values  A'_j = P_j * scaleV_j;  O_block = R(pieces of A') * amax(A') + sum_j(A'_j * offsetV_j)
Everything else (scaleValue, pse, mask, the fp32 online softmax, acc / l and the output cast) is the
fp32 (high-precision) x910 kernel's, `prompt_flash_attention._Forward`. softmaxLse is log(l) + m,
+inf for a row whose every key is masked when the row-invalid correction runs, plus per channel
with a key offset scaleValue * sum(q * scaleK * offsetK); rows the kernel never computes keep the
+inf the output's initialisation writes (InitLseOutputSingleCore: 3e+99 as fp32). Row sums fold 64-element
blocks as MsdRowSum does; the order inside WholeReduceSum and whether the vector FusedMulAdd rounds
once are not established (a float64 sum rounded once; two roundings).
"""

from dataclasses import dataclass

import numpy as np

F32 = np.float32
EXPAND = F32(254.98)  # msdAntiqExpandCoeff
COEFF1 = F32(127.49)  # msdAntiqCoeff1
COEFF2 = F32(1) / COEFF1  # msdAntiqCoeff2
STEP = F32(1) / EXPAND  # the second piece's weight in MsdMatmulResCombine
PER_CHANNEL, PER_TOKEN = 0, 1
REPEAT = 64  # fp32 elements per vector repeat (MsdRowSum's block)


def _round_away(x: np.ndarray) -> np.ndarray:
    """CAST_ROUND of fp32 to an integral value, half away from zero (in float64: exact)."""
    y = x.astype(np.float64)
    return (np.sign(y) * np.floor(np.abs(y) + 0.5)).astype(F32)


def split(x: np.ndarray, amax: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The two int8 pieces (as float64 integers) of fp32 rows ``x`` [r, c]; ``amax`` [r] (None: 1,
    the softmax side, whose numerators are at most 1). A row of zeros (amax 0) gives NaN pieces on
    the hardware; its products are then multiplied by amax 0, so any finite piece gives the same
    result: 0 here."""
    with np.errstate(divide="ignore", invalid="ignore"):
        a = x * COEFF1 if amax is None else x * (COEFF1 / amax)[:, None]
        first = _round_away(a)
        second = _round_away((a - first) * EXPAND)
    return tuple(np.nan_to_num(p, nan=0.0, posinf=0.0, neginf=0.0).astype(np.float64) for p in (first, second))


def combine(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """MsdMatmulResCombine over the two int32 products (float64 holding exact integers)."""
    return (first.astype(F32) + second.astype(F32) * STEP) * COEFF2


def row_sum(x: np.ndarray) -> np.ndarray:
    """MsdRowSum of fp32 rows [r, c]: the tail folded onto the first block, the 64-wide blocks folded
    pairwise, then the last block's sum (float64, rounded once)."""
    x = np.array(x, F32)
    blocks, remain = divmod(x.shape[1], REPEAT)
    if blocks and remain:
        x[:, :remain] += x[:, blocks * REPEAT :]
    while blocks > 1:
        loop, blocks = blocks // 2, (blocks + 1) // 2
        for j in range(loop):
            x[:, j * REPEAT : (j + 1) * REPEAT] += x[:, (j + blocks) * REPEAT : (j + blocks + 1) * REPEAT]
    return x[:, : min(x.shape[1], REPEAT)].astype(np.float64).sum(axis=1).astype(F32)


def _products(pieces, y8: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The exact int32 products of both pieces with int8 rows ``y8`` [c, D] (pieces [r, D]) or, for
    the value side, with the columns of ``y8`` [c, D] (pieces [r, c])."""
    y = y8.astype(np.float64)
    return tuple(p @ y for p in pieces)


@dataclass(frozen=True)
class MsdParams:
    """The separate parameters as fp32: per channel [N2, D] (key offset unused), per token [B2, S2]."""

    mode: int
    key_scale: np.ndarray
    key_offset: np.ndarray | None
    value_scale: np.ndarray
    value_offset: np.ndarray | None

    def scores(self, q: np.ndarray, k8: np.ndarray, b: int, n2: int, c0: int) -> np.ndarray:
        """S [r, c] of fp32 query rows ``q`` [r, D] against int8 keys ``k8`` [c, D] at key c0."""
        if self.mode == PER_CHANNEL:
            q = q * self.key_scale[n2]
        amax = np.abs(q).max(axis=1)
        s = combine(*_products(split(q, amax), k8.T)) * amax[:, None]
        if self.mode == PER_CHANNEL:
            return s
        cols = slice(c0, c0 + k8.shape[0])
        if self.key_offset is not None:
            s = s + self.key_offset[b, cols] * row_sum(q)[:, None]
        return s * self.key_scale[b, cols]

    def pv(self, p: np.ndarray, v8: np.ndarray, b: int, c0: int) -> np.ndarray:
        """O_block [r, D] of the fp32 numerators ``p`` [r, c] against int8 values ``v8`` [c, D]."""
        if self.mode == PER_CHANNEL:
            return combine(*_products(split(p, None), v8))
        cols = slice(c0, c0 + v8.shape[0])
        scaled = p * self.value_scale[b, cols]
        amax = np.abs(scaled).max(axis=1)
        o = combine(*_products(split(scaled, amax), v8)) * amax[:, None]
        if self.value_offset is not None:
            o = o + row_sum(scaled * self.value_offset[b, cols])[:, None]
        return o

    def lse(self, lse: np.ndarray, q: np.ndarray, n2: int, scale: np.float32) -> np.ndarray:
        """softmaxLse of fp32 query rows ``q`` from the kernel's log(l) + m: per channel with a key
        offset the offset's row constant, left out of the scores, added back (SoftmaxLseCopyOut):
        scaleValue * sum(q * scaleK * offsetK)."""
        if self.mode == PER_TOKEN or self.key_offset is None:
            return lse
        return lse + row_sum(self.key_offset[n2] * (q * self.key_scale[n2])) * scale

    def output(self, o: np.ndarray, n2: int) -> np.ndarray:
        """acc / l as the output step leaves it before the cast (per channel the value's parameters)."""
        if self.mode == PER_TOKEN:
            return o
        if self.value_offset is not None:
            o = o + self.value_offset[n2]
        return o * self.value_scale[n2]
