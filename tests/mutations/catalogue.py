"""The mutations tests/mutations/run.py applies, one at a time: plausible single bugs in the kernels
(a rounding mode switched or removed, one element NaN or zeroed, a mask off by one, duplicates
added once). Each must make at least one of its tests fail.

An entry is `Mutation(name, file, old, new, tests)`: `old` must occur exactly once in `file`
(`count=` for more), so an entry that no longer matches the source stops the run instead of
testing nothing. Add the mutations of a new operator in its own section, with its test files.
"""

from mutation import Mutation

K = "aclnn_emu/kernels/"
FAG = K + "flash_attention/flash_attention_score_grad.py"
PFA = K + "flash_attention/prompt_flash_attention.py"
SFAG = K + "sparse_attention/sparse_flash_attention_grad.py"
LIG = K + "sparse_attention/lightning_indexer_grad.py"
FAS = K + "flash_attention/flash_attention_score.py"
IFA = K + "flash_attention/incre_flash_attention.py"
FLASH_ATTENTION_INCRE_ANTIQUANT_ARCH35 = "aclnn_emu/ops/flash_attention/incre/antiquant_arch35.py"
FLASH_ATTENTION_INCRE_CHECKS = "aclnn_emu/ops/flash_attention/incre/checks.py"
FLASH_ATTENTION_INCRE_LAUNCH = "aclnn_emu/ops/flash_attention/incre/launch.py"
FLASH_ATTENTION_INCRE_LAUNCH_ANTIQUANT_ARCH35 = "aclnn_emu/ops/flash_attention/incre/launch_antiquant_arch35.py"
FLASH_ATTENTION_INCRE_LAUNCH_ARCH35 = "aclnn_emu/ops/flash_attention/incre/launch_arch35.py"
FLASH_ATTENTION_INCRE_SPECULATIVE = "aclnn_emu/ops/flash_attention/incre/speculative.py"
IFA_OP = "aclnn_emu/ops/flash_attention/incre_flash_attention.py"
IFA95_INT8 = "aclnn_emu/ops/flash_attention/ifa_antiquant_95.py"
AQ35 = K + "flash_attention/antiquant_arch35.py"
LI = K + "sparse_attention/lightning_indexer.py"
SFA = K + "sparse_attention/sparse_flash_attention.py"
NATIVE = K + "native.c"

FAG_TESTS = ("tests/test_flash_attention_score_grad.py", "tests/test_flash_attention_score_grad_cabi.py")
PFA_TESTS = (
    "tests/test_prompt_flash_attention.py",
    "tests/test_prompt_flash_attention_cabi.py",
    "tests/test_prompt_flash_attention_kernel.py",
)
SFAG_TESTS = ("tests/test_sparse_flash_attention_grad.py", "tests/test_sparse_flash_attention_grad_cabi.py")
LIG_TESTS = (
    "tests/test_lightning_indexer_grad.py",
    "tests/test_lightning_indexer_grad_kernel.py",
    "tests/test_lightning_indexer_grad_cabi.py",
)
KV_TESTS = (
    "tests/test_scatter_pa_kv_cache.py",
    "tests/test_scatter_pa_kv_cache_kernel.py",
    "tests/test_scatter_pa_kv_cache_cabi.py",
    "tests/test_gather_pa_kv_cache.py",
    "tests/test_gather_pa_kv_cache_cabi.py",
)
ROUNDING_TESTS = ("tests/test_rounding.py", "tests/test_native.py")
FAS_TESTS = (
    "tests/test_flash_attention_score.py",
    "tests/test_flash_attention_score_cabi.py",
    "tests/test_flash_attention_train_step.py",
)
IFA_TESTS = (
    "tests/test_incre_flash_attention.py",
    "tests/test_incre_flash_attention_cabi.py",
    "tests/test_serving_loop.py",
    "tests/test_incre_flash_attention_source_paths.py",
)
IFA95_TESTS = ("tests/test_incre_flash_attention_regbase.py",)
IFA95_INT8_TESTS = IFA95_TESTS + ("tests/test_incre_flash_attention_cabi.py",)
LI_TESTS = (
    "tests/test_lightning_indexer.py",
    "tests/test_lightning_indexer_cabi.py",
    "tests/test_sparse_attention_round_trip.py",
)
SFA_TESTS = (
    "tests/test_sparse_flash_attention.py",
    "tests/test_sparse_flash_attention_cabi.py",
    "tests/test_sparse_attention_round_trip.py",
)

# An output store that rounds to nearest even (numpy's narrowing) instead of CAST_ROUND.
STORE_HALF_EVEN = (
    "store_half_away = lambda dst, x, dtype, divisor=None: "
    "dst.__setitem__(Ellipsis, x if divisor is None else x / divisor[:, None])\n"
)

MUTATIONS = [
    # --- FlashAttentionScoreGrad ---------------------------------------------------------------
    Mutation(
        "fag-P-half-even",
        FAG,
        "native.round_product(dropped, probs, keep, self.rounding)",
        "dropped[...] = (probs if keep is None else probs * keep).astype(self.dtype)",
        FAG_TESTS,
    ),
    Mutation(
        "fag-P-unrounded",
        FAG,
        "native.round_product(dropped, probs, keep, self.rounding)",
        "native.round_product(dropped, probs, keep, None)",
        FAG_TESTS,
    ),
    Mutation(
        "fag-dS-half-even",
        FAG,
        "native.softmax_grad_(grad, probs, head.dsum[i0:i1], keep, self.rounding)",
        "native.softmax_grad_(grad, probs, head.dsum[i0:i1], keep, None); grad[...] = grad.astype(self.dtype)",
        FAG_TESTS,
    ),
    Mutation(
        "fag-dS-unrounded",
        FAG,
        "native.softmax_grad_(grad, probs, head.dsum[i0:i1], keep, self.rounding)",
        "native.softmax_grad_(grad, probs, head.dsum[i0:i1], keep, None)",
        FAG_TESTS,
    ),
    Mutation(
        "fag-outputs-half-even",
        FAG,
        "from aclnn_emu.kernels.rounding import CAST_ROUND, store_half_away\n",
        "from aclnn_emu.kernels.rounding import CAST_ROUND\n" + STORE_HALF_EVEN,
        FAG_TESTS,
    ),
    Mutation(
        "fag-one-nan-per-head-dq",
        FAG,
        "        dq_rows *= self.scale\n",
        "        dq_rows *= self.scale\n        if i0 == 0:\n            dq_rows[0, 0] = np.nan\n",
        FAG_TESTS,
    ),
    Mutation(
        "fag-one-zero-per-kv-head-dk",
        FAG,
        "                    acc_k *= self.scale\n",
        "                    acc_k *= self.scale\n                    acc_k[0, 0] = 0\n",
        FAG_TESTS,
    ),
    Mutation(
        "fag-pse-type1-after-scale",
        K + "flash_attention/pse.py",
        "return self.pse is not None and self.type == 1",
        "return False",
        FAG_TESTS,
    ),
    Mutation(
        "fag-band-next-off-by-one",
        K + "attention/masks.py",
        "return (offset > next_) | (offset < -pre)",
        "return (offset > next_ + 1) | (offset < -pre)",
        FAG_TESTS + PFA_TESTS,
    ),
    Mutation(
        "fag-mode3-off-by-one",
        K + "flash_attention/sparse_modes.py",
        "3: (UNBOUNDED, shift),",
        "3: (UNBOUNDED, shift - 1),",
        FAG_TESTS,
    ),
    Mutation(
        "fag-lanes-first-only",
        FAG,
        "        replicated = all((x == x[:, :1]).all() for x in lanes)\n",
        "        replicated = True\n",
        FAG_TESTS,
    ),
    Mutation(
        "fag-fully-masked-rows-zero",
        FAG,
        "fill = np.exp(NEG_FLT_MAX - lanes_max) / lanes_sum",
        "fill = np.zeros_like(lanes_max)",
        FAG_TESTS,
    ),
    # --- PromptFlashAttention ------------------------------------------------------------------
    Mutation(
        "pfa-fp16-scores-unrounded",
        PFA,
        "self.fp16_scores = (q.dtype == INT8 and not self.arch35_quant) or (q.dtype == FP16 and not high)",
        "self.fp16_scores = q.dtype == INT8 and not self.arch35_quant",
        PFA_TESTS,
    ),
    Mutation(
        "pfa-scores-half-away",
        NATIVE,
        "        if (fp16) v = round_fp16(v);",
        "        if (fp16) v = round_fp16_half_away(v);",
        PFA_TESTS + ("tests/test_native.py",),
    ),
    Mutation(
        "pfa-scores-f16c-truncated",
        NATIVE,
        "_mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT))",
        "_mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_ZERO))",
        PFA_TESTS,
    ),
    Mutation(
        "native-store-f16c-even-truncated",
        NATIVE,
        "(h + j), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT)",
        "(h + j), _mm256_cvtps_ph(v, _MM_FROUND_TO_ZERO)",
        ("tests/test_native.py",),
    ),
    Mutation(
        "pfa-fp16-P-half-away", PFA, 'self.rounding = "fp16_even" if', 'self.rounding = "fp16_away" if', PFA_TESTS
    ),
    Mutation("pfa-fp16-P-unrounded", PFA, 'self.rounding = "fp16_even" if', "self.rounding = None if", PFA_TESTS),
    Mutation(
        "pfa-bf16-P-unrounded",
        PFA,
        '("bf16_even" if precision.bf16_p_even else "bf16_away")',
        '("bf16_even" if precision.bf16_p_even else None)',
        PFA_TESTS,
    ),
    Mutation(
        "pfa-bf16-P-even-unrounded",
        PFA,
        '("bf16_even" if precision.bf16_p_even else "bf16_away")',
        '(None if precision.bf16_p_even else "bf16_away")',
        PFA_TESTS,
    ),
    Mutation(
        "pfa-bf16-output-half-even", PFA, "            round_half_away_(o, BF16)  #", "            pass  #", PFA_TESTS
    ),
    Mutation(
        "pfa-high-precision-fp16-output-half-even",
        PFA,
        "            round_half_away_(o, FP16)\n",
        "            pass\n",
        PFA_TESTS,
    ),
    Mutation(
        "pfa-fp16-output-half-away",
        PFA,
        "            native.narrow_fp16(out, o)",
        "            out[...] = round_half_away_(o, FP16)",
        PFA_TESTS,
    ),
    Mutation(
        "pfa-int8-quantise-half-away",
        K + "flash_attention/quant.py",
        "    np.rint(x, out=x)\n",
        "    np.copysign(np.floor(np.abs(x) + 0.5), x, out=x)\n",
        PFA_TESTS,
    ),
    Mutation(
        "pfa-int8-PV-unrounded",
        PFA,
        "native.scale_(pv, pre=self.int8.deq2, fp16=not self.arch35_quant)",
        "native.scale_(pv, pre=self.int8.deq2, fp16=False)",
        PFA_TESTS,
    ),
    Mutation(
        "pfa-deq-scale-untruncated",
        K + "flash_attention/quant.py",
        "_HIGH_19_BITS = np.uint32(0xFFFFE000)",
        "_HIGH_19_BITS = np.uint32(0xFFFFFFFF)",
        PFA_TESTS,
    ),
    Mutation(
        "pfa-fp16-mask-fill-inf",
        PFA,
        "FP16_MASK_FILL = np.float32(-65504.0)",
        "FP16_MASK_FILL = np.float32(-np.inf)",
        PFA_TESTS,
    ),
    Mutation("pfa-kv-block-512", PFA, "KV_BLOCK = 1024 ", "KV_BLOCK = 512 ", PFA_TESTS),
    Mutation(
        "pfa-one-nan-per-head",
        PFA,
        "        o[~computed] = 0\n",
        "        o[~computed] = 0\n        o[0, 0] = np.nan\n",
        PFA_TESTS,
    ),
    Mutation(
        "pfa-one-zero-per-head",
        PFA,
        "        o[~computed] = 0\n",
        "        o[~computed] = 0\n        o[0, -1] = 0\n",
        PFA_TESTS,
    ),
    Mutation(
        "pfa-band-start-off-by-one",
        K + "attention/masks.py",
        "    j0 = min(max(i0 - pre, 0), s2)",
        "    j0 = min(max(i0 - pre + 1, 0), s2)",
        PFA_TESTS,
    ),
    Mutation(
        "pfa-int8-saturates-at-127",
        K + "flash_attention/quant.py",
        "return np.clip(x, -128, 127, out=x)",
        "return np.clip(x, -127, 127, out=x)",
        PFA_TESTS,
    ),
    # --- SparseFlashAttentionGrad --------------------------------------------------------------
    Mutation(
        "sfag-P-half-even",
        SFAG,
        "p_h, ds_h = round_half_away_(p, half), ds",
        "p_h, ds_h = p.astype(half).astype(FP32), ds",
        SFAG_TESTS,
    ),
    Mutation(
        "sfag-dS-half-even",
        SFAG,
        "d_l.reshape(-1), None, CAST_ROUND[half])\n",
        "d_l.reshape(-1), None, None)\n        ds[...] = ds.astype(half)\n",
        SFAG_TESTS,
    ),
    Mutation(
        "sfag-dS-unrounded",
        SFAG,
        "d_l.reshape(-1), None, CAST_ROUND[half])",
        "d_l.reshape(-1), None, None)",
        SFAG_TESTS,
    ),
    Mutation(
        "sfag-outputs-half-even",
        SFAG,
        "    round_half_away_(values, main.dtype)  # in place",
        "    pass  # in place",
        SFAG_TESTS,
    ),
    Mutation(
        "sfag-one-nan-per-row-block-dq",
        SFAG,
        "                _store(dqc * self.scale, self.grads.dq[rows], dq_rope)",
        "                dqc[0, 0, 0] = np.nan\n                _store(dqc * self.scale, self.grads.dq[rows], dq_rope)",
        SFAG_TESTS,
    ),
    Mutation(
        "sfag-one-zero-dk",
        SFAG,
        "        _store(sums.k * x.scale, grads.dk, grads.dk_rope)",
        "        sums.k[np.argmax(np.abs(sums.k).max(axis=1))] = 0\n"
        "        _store(sums.k * x.scale, grads.dk, grads.dk_rope)",
        SFAG_TESTS,
    ),
    Mutation(
        "sfag-duplicates-added-once",
        SFAG,
        "            native.scatter_add_rows(self.k, pos, dkc)",
        "            self.k[pos] += dkc",
        SFAG_TESTS,
    ),
    Mutation(
        "sfag-diagonal-mask-off-by-one",
        K + "sparse_attention/select.py",
        "    keep = valid_end - diag * bs + 1",
        "    keep = valid_end - diag * bs + 2",
        SFAG_TESTS,
    ),
    # --- LightningIndexerGrad ------------------------------------------------------------------
    Mutation(
        "lig-dweights-half-even",
        LIG,
        "job.dweights[r0:r1] = cast_round(",
        "job.dweights[r0:r1] = cast_rint(",
        LIG_TESTS,
    ),
    Mutation(
        "lig-dk-half-even",
        LIG,
        "    dk[...] = cast_round(total, dtype)",
        "    dk[...] = cast_rint(total, dtype)",
        LIG_TESTS,
    ),
    Mutation("lig-dq-half-away", LIG, "job.dq[r0:r1] = cast_rint(", "job.dq[r0:r1] = cast_round(", LIG_TESTS),
    Mutation("lig-Y-unrounded", LIG, "        np.copyto(grad, narrow)\n", "", LIG_TESTS),
    Mutation(
        "lig-Y-half-away",
        LIG,
        "        np.copyto(grad, narrow)\n",
        "        grad[...] = cast_round(grad, job.dtype)\n",
        LIG_TESTS,
    ),
    Mutation(
        "lig-relu-grad-at-zero-one",
        LIG,
        "positive = np.greater(relu, 0, out=relu)",
        "positive = np.greater_equal(relu, 0, out=relu)",
        LIG_TESTS,
    ),
    Mutation(
        "lig-duplicates-added-once",
        LIG,
        "native.scatter_add_rows(self.dk, rows[usable], values[usable])",
        "self.dk[rows[usable]] += values[usable]",
        LIG_TESTS,
    ),
    Mutation(
        "lig-one-nan-per-chunk-dq",
        LIG,
        "        contrib = np.matmul(",
        "        job.dq[r0, 0, 0] = np.nan\n        contrib = np.matmul(",
        LIG_TESTS,
    ),
    Mutation(
        "lig-one-zero-dk",
        LIG,
        "    dk[...] = cast_round(total, dtype)",
        "    total[np.argmax(np.abs(total).max(axis=1))] = 0\n    dk[...] = cast_round(total, dtype)",
        LIG_TESTS,
    ),
    # --- FlashAttentionScore (forward) ---------------------------------------------------------
    Mutation(
        "fas-P-half-even",
        FAS,
        "p_rounding = None if keep_bits is not None else self.rounding",
        'p_rounding = None if keep_bits is not None else (self.rounding or "").replace("away", "even") or None',
        FAS_TESTS,
    ),
    Mutation(
        "fas-P-unrounded",
        FAS,
        "p_rounding = None if keep_bits is not None else self.rounding",
        "p_rounding = None",
        FAS_TESTS,
    ),
    Mutation(
        "fas-dropped-P-half-even",
        FAS,
        "native.round_product(scores, scores, keep, self.rounding)",
        "scores *= keep; scores[...] = scores.astype(self.dtype)",
        FAS_TESTS,
    ),
    Mutation(
        "fas-dropped-P-unrounded",
        FAS,
        "native.round_product(scores, scores, keep, self.rounding)",
        "native.round_product(scores, scores, keep, None)",
        FAS_TESTS,
    ),
    Mutation(
        "fas-output-half-even",
        FAS,
        "from aclnn_emu.kernels.rounding import CAST_ROUND, saturate_, store_half_away\n",
        "from aclnn_emu.kernels.rounding import CAST_ROUND, saturate_\n" + STORE_HALF_EVEN,
        FAS_TESTS,
    ),
    Mutation(
        "fas-one-nan-per-head",
        FAS,
        "        acc /= row_sum[:, None]\n",
        "        acc /= row_sum[:, None]\n        if i0 == 0:\n            acc[0, 0] = np.nan\n",
        FAS_TESTS,
    ),
    Mutation(
        "fas-one-zero-per-head",
        FAS,
        "        acc /= row_sum[:, None]\n",
        "        acc /= row_sum[:, None]\n        if i0 == 0:\n            acc[0, -1] = 0\n",
        FAS_TESTS,
    ),
    Mutation(
        "fas-softmax-max-one-lane-zero",
        FAS,
        "        self.softmax_max[b, n, i0:i1] = row_max[:, None]\n",
        "        self.softmax_max[b, n, i0:i1] = row_max[:, None]\n        self.softmax_max[b, n, i0, -1] = 0\n",
        FAS_TESTS,
    ),
    Mutation(
        "fas-softmax-sum-one-lane-nan",
        FAS,
        "        self.softmax_sum[b, n, i0:i1] = row_sum[:, None]\n",
        "        self.softmax_sum[b, n, i0:i1] = row_sum[:, None]\n        self.softmax_sum[b, n, i0, 3] = np.nan\n",
        FAS_TESTS,
    ),
    Mutation("fas-invalid-line-sum-one", FAS, "row_sum[unseen] = FLT_MAX", "row_sum[unseen] = 1", FAS_TESTS),
    Mutation("fas-fully-masked-rows-band-only", FAS, "elif (j0, j1) != (0, self.shape[4]):", "elif False:", FAS_TESTS),
    Mutation(
        "fas-mode2-off-by-one",
        K + "flash_attention/sparse_modes.py",
        "2: (UNBOUNDED, 0),",
        "2: (UNBOUNDED, 1),",
        FAS_TESTS,
    ),
    Mutation(
        "fas-mode3-off-by-one",
        K + "flash_attention/sparse_modes.py",
        "3: (UNBOUNDED, shift),",
        "3: (UNBOUNDED, shift - 1),",
        FAS_TESTS,
    ),
    Mutation(
        "fas-mode4-pre-off-by-one",
        K + "flash_attention/sparse_modes.py",
        "4: (pre - shift, next_ + shift),",
        "4: (pre - shift + 1, next_ + shift),",
        FAS_TESTS,
    ),
    Mutation(
        "fas-prefix-off-by-one",
        K + "flash_attention/sparse_modes.py",
        "band &= np.arange(j0, j1)[None, :] >= self.prefix[b]",
        "band &= np.arange(j0, j1)[None, :] > self.prefix[b]",
        FAS_TESTS,
    ),
    Mutation(
        "fas-band-next-off-by-one",
        K + "attention/masks.py",
        "return (offset > next_) | (offset < -pre)",
        "return (offset > next_ + 1) | (offset < -pre)",
        FAS_TESTS,
    ),
    Mutation(
        "fas-key-range-end-off-by-one",
        K + "attention/masks.py",
        "j1 = max(min(i1 - 1 + next_ + 1, s2), j0)",
        "j1 = max(min(i1 - 1 + next_, s2), j0)",
        FAS_TESTS,
    ),
    Mutation(
        "fas-pse-type1-after-scale",
        K + "flash_attention/pse.py",
        "return self.pse is not None and self.type == 1",
        "return False",
        FAS_TESTS,
    ),
    # --- IncreFlashAttention -------------------------------------------------------------------
    Mutation(
        "ifa-fp16-P-half-even",
        IFA,
        'if q.dtype == BF16 else "fp16_away"',
        'if q.dtype == BF16 else "fp16_even"',
        IFA_TESTS,
    ),
    Mutation(
        "ifa-fp16-P-unrounded", IFA, 'if q.dtype == BF16 else "fp16_away"', "if q.dtype == BF16 else None", IFA_TESTS
    ),
    Mutation(
        "ifa-bf16-P-half-even",
        IFA,
        "alpha, rounding=self.rounding)\n",
        "alpha, rounding=None if self.q.dtype == BF16 else self.rounding)\n"
        "            if self.q.dtype == BF16:\n                block[...] = block.astype(BF16)\n",
        IFA_TESTS,
    ),
    Mutation("ifa-bf16-P-unrounded", IFA, 'self.rounding = "bf16_away" if', "self.rounding = None if", IFA_TESTS),
    Mutation(
        "ifa-fp16-output-half-even",
        IFA,
        "                round_half_away_(o, FP16)  #",
        "                pass  #",
        IFA_TESTS,
    ),
    Mutation(
        "ifa-bf16-output-half-away",
        IFA,
        "            if out.dtype == FP16:\n                round_half_away_(o, FP16)",
        "            if out.dtype in (FP16, BF16):\n                round_half_away_(o, out.dtype)",
        IFA_TESTS,
    ),
    Mutation(
        "ifa-per-channel-fp16-unrounded",
        IFA,
        "            round_half_away_(o, FP16)\n            np.clip",
        "            np.clip",
        IFA_TESTS,
    ),
    Mutation(
        "ifa-per-channel-int8-half-even",
        IFA,
        "np.clip(np.trunc(o + np.copysign(np.float32(0.5), o)), -128, 127, out=o)",
        "np.clip(np.rint(o), -128, 127, out=o)",
        IFA_TESTS,
    ),
    Mutation(
        "ifa-per-tensor-int8-half-away",
        K + "flash_attention/quant.py",
        "    np.rint(x, out=x)\n",
        "    np.copysign(np.floor(np.abs(x) + 0.5), x, out=x)\n",
        IFA_TESTS,
    ),
    Mutation(
        "ifa-one-nan-per-head",
        IFA,
        "        o = acc / row_sum.reshape(heads, g, 1)\n",
        "        o = acc / row_sum.reshape(heads, g, 1)\n        o[:, 0, 0] = np.nan\n",
        IFA_TESTS,
    ),
    Mutation(
        "ifa-one-zero-per-head",
        IFA,
        "        o = acc / row_sum.reshape(heads, g, 1)\n",
        "        o = acc / row_sum.reshape(heads, g, 1)\n        o[:, -1, -1] = 0\n",
        IFA_TESTS,
    ),
    Mutation("ifa-mask-fill-inf", IFA, "MASK_FILL = np.float32(-1e12)", "MASK_FILL = np.float32(-np.inf)", IFA_TESTS),
    Mutation(
        "ifa-mask-shifted-by-one",
        IFA,
        "where=self.mask[b, cols][None, :] != 0",
        "where=np.roll(self.mask[b, cols], 1)[None, :] != 0",
        IFA_TESTS,
    ),
    Mutation(
        "ifa-mask-pse-ignore-padding", IFA, "cols = slice(first + j0, first + j1)", "cols = slice(j0, j1)", IFA_TESTS
    ),
    Mutation(
        "ifa-padding-start-off-by-one", FLASH_ATTENTION_INCRE_LAUNCH,
        "start = [p.kv_lens[0] - pad - n for n in lengths]",
        "start = [p.kv_lens[0] - pad - n + 1 for n in lengths]",
        IFA_TESTS,
    ),
    Mutation("ifa-speculative-mask-rows-per-batch", FLASH_ATTENTION_INCRE_LAUNCH, "stride=0 if p.mtp else None", "stride=None", IFA_TESTS),
    Mutation(
        "ifa-speculative-query-by-layout", FLASH_ATTENTION_INCRE_LAUNCH,
        'q = a.query.read("query").reshape(-1)[: p.batch * p.heads * p.d].reshape(p.batch, p.heads, p.d)',
        'q = a.query.read("query").reshape(p.batch, p.heads, -1)[..., :p.d]',
        IFA_TESTS,
    ),
    Mutation(
        "ifa-speculative-split-rows-ignored", FLASH_ATTENTION_INCRE_CHECKS, "        if outer > 1:\n", "        if outer > 9:\n", IFA_TESTS
    ),
    Mutation(
        "ifa-speculative-int8-gmax-256", FLASH_ATTENTION_INCRE_SPECULATIVE,
        "G_MAX, G_MAX_INT8 = 256, 128",
        "G_MAX, G_MAX_INT8 = 256, 256",
        IFA_TESTS,
    ),
    Mutation(
        "ifa-speculative-group-split-odd", FLASH_ATTENTION_INCRE_SPECULATIVE,
        "split = min(split - (split & 1), group)",
        "split = min(split, group)",
        IFA_TESTS,
    ),
    Mutation(
        "ifa-speculative-split-by-query-layout", FLASH_ATTENTION_INCRE_SPECULATIVE,
        "return kv_rank == 3 if paged else",
        "return",
        IFA_TESTS,
    ),
    Mutation("ifa-key-heads-by-its-own-split", FLASH_ATTENTION_INCRE_LAUNCH, "    if p.kv_shape is None:\n", "    if True:\n", IFA_TESTS),
    Mutation(
        "ifa-key-heads-reach-one-row-short", FLASH_ATTENTION_INCRE_LAUNCH,
        "(n2 - 1) * s * d + e * d for b, e",
        "(n2 - 1) * s * d + (e - 1) * d for b, e",
        IFA_TESTS,
    ),
    Mutation(
        "ifa-output-head-major", FLASH_ATTENTION_INCRE_LAUNCH,
        "    flat = np.ascontiguousarray(o).reshape(-1)\n",
        "    flat = np.ascontiguousarray(o.transpose(1, 0, 2)).reshape(-1)\n",
        IFA_TESTS,
    ),
    Mutation(
        "ifa-quant2-rank5-last-values", FLASH_ATTENTION_INCRE_LAUNCH,
        "v[: p.heads * p.d].reshape(p.heads, p.d)",
        "v[-p.heads * p.d :].reshape(p.heads, p.d)",
        IFA_TESTS,
    ),
    Mutation(
        "ifa-actual-length-one-short",
        IFA,
        "first, length = self.kv.start[b], int(self.lengths[b])",
        "first, length = self.kv.start[b], int(self.lengths[b]) - 1",
        IFA_TESTS,
    ),
    Mutation(
        "ifa-paged-token-off-by-one",
        IFA,
        "tokens = positions % self.block_size",
        "tokens = (positions + 1) % self.block_size",
        IFA_TESTS,
    ),
    Mutation("ifa-chunk-1024", IFA, "KV_CHUNK = 2048", "KV_CHUNK = 1024", IFA_TESTS),
    # IncreFlashAttention on Ascend910_95: the PFA regbase kernel run batch by batch
    Mutation("ifa95-mask-ignores-padding", FLASH_ATTENTION_INCRE_LAUNCH_ARCH35, "start : start + length])", "0:length])", IFA95_TESTS),
    Mutation("ifa95-pse-ignores-padding", FLASH_ATTENTION_INCRE_LAUNCH_ARCH35, "[..., start:]", "[..., 0:]", IFA95_TESTS),
    # the masked walk of the arch35 kernels (MaskBlocks)
    Mutation(
        "ifa95-mask-blocks-from-key-0", FLASH_ATTENTION_INCRE_LAUNCH_ARCH35,
        "return off // self.s2 * self.s2, off + rows",
        "return 0, off + rows",
        IFA95_TESTS,
    ),
    Mutation(
        "ifa95-mask-blocks-to-block-end", FLASH_ATTENTION_INCRE_LAUNCH_ARCH35,
        "return off // self.s2 * self.s2, off + rows",
        "return off // self.s2 * self.s2, off + self.s1",
        IFA95_TESTS,
    ),
    Mutation(
        "ifa95-mask-rows-not-cut", FLASH_ATTENTION_INCRE_LAUNCH_ARCH35,
        "rows_total = min(q.shape[2], k.shape[1])",
        "rows_total = q.shape[2]",
        IFA95_TESTS,
    ),
    Mutation("ifa95-row-invalid-ignored", FLASH_ATTENTION_INCRE_LAUNCH_ARCH35, "        if blocks.row_invalid:", "        if False:", IFA95_TESTS),
    Mutation(
        "ifa95-row-invalid-not-quantised", FLASH_ATTENTION_INCRE_LAUNCH_ARCH35,
        "    if out_quant is not None:\n        for n in range(heads):",
        "    if False:\n        for n in range(heads):",
        IFA95_TESTS,
    ),
    Mutation(
        "ifa95-padding-start-off-by-one", FLASH_ATTENTION_INCRE_LAUNCH_ARCH35,
        "start = p.s2 - length - pad\n",
        "start = p.s2 - length - pad + 1\n",
        IFA95_TESTS,
    ),
    Mutation(
        "ifa95-paged-blocks-off-by-one", FLASH_ATTENTION_INCRE_LAUNCH_ARCH35,
        "rows[:, start : start + length]",
        "rows[:, start + 1 : start + length + 1]",
        IFA95_TESTS,
    ),
    # ... and an INT8 key there: IFATilingV2's checks and the arch35 dequantisation
    Mutation(
        "aq35-offset-sum-not-rounded", AQ35, "        round_half_even_(y, dtype)\n    y *=", "    y *=", IFA95_TESTS
    ),
    Mutation(
        "aq35-scale-before-offset",
        AQ35,
        "        y += np.asarray(offset, np.float32)",
        "        y += np.asarray(offset, np.float32) * np.asarray(scale, np.float32)",
        IFA95_TESTS,
    ),
    Mutation(
        "ifa95-int8-key-takes-value-params", FLASH_ATTENTION_INCRE_LAUNCH_ANTIQUANT_ARCH35,
        "return (scale[0], offset[0]), (scale[1], offset[1])",
        "return (scale[1], offset[1]), (scale[0], offset[0])",
        IFA95_TESTS,
    ),
    Mutation(
        "ifa95-int8-offset-dropped", FLASH_ATTENTION_INCRE_LAUNCH_ANTIQUANT_ARCH35,
        "offset = pair(a.antiquantOffset) if a.antiquantOffset is not None else (None, None)",
        "offset = (None, None)",
        IFA95_TESTS,
    ),
    Mutation(
        "ifa95-int8-mask-row-stride", FLASH_ATTENTION_INCRE_LAUNCH_ANTIQUANT_ARCH35,
        '_rows(a.attenMask, "attenMask", p.b, width)',
        '_rows(a.attenMask, "attenMask", p.b, width, stride=0)',
        IFA95_TESTS,
    ),
    Mutation(
        "ifa95-int8-inner-precise-0-3", FLASH_ATTENTION_INCRE_ANTIQUANT_ARCH35,
        "if not self.pfa and precise not in (0, 1):",
        "if not self.pfa and precise not in (0, 1, 2, 3):",
        IFA95_INT8_TESTS,
    ),
    Mutation(
        "ifa95-int8-per-channel-n-d-refused", FLASH_ATTENTION_INCRE_ANTIQUANT_ARCH35,
        "{(2, n, 1, d), (2, n, d), (2, n * d)} |",
        "{(2, n, 1, d), (2, n * d)} |",
        IFA95_TESTS,
    ),
    Mutation(
        "ifa95-int8-paged-padding-accepted", FLASH_ATTENTION_INCRE_ANTIQUANT_ARCH35,
        '            _fail("pa_kv_padding"',
        '            return\n            _fail("pa_kv_padding"',
        IFA95_INT8_TESTS,
    ),
    Mutation(
        "ifa95-int8-table-batch-unchecked", FLASH_ATTENTION_INCRE_ANTIQUANT_ARCH35,
        "if table.shape[0] != self.batch:",
        "if table.shape[0] > self.batch:",
        IFA95_INT8_TESTS,
    ),
    Mutation(
        "ifa95-int8-s2-base-ignores-pse", FLASH_ATTENTION_INCRE_ANTIQUANT_ARCH35,
        "(512 if pse else 1024) if d <= 64",
        "1024 if d <= 64",
        IFA95_TESTS,
    ),
    Mutation(
        "ifa95-int8-s2-base-d128", FLASH_ATTENTION_INCRE_ANTIQUANT_ARCH35,
        "else 512 if d <= 128 else 256",
        "else 256 if d <= 128 else 256",
        IFA95_TESTS,
    ),
    Mutation(
        "ifa95-int8-pfa-mask-heads-unchecked", FLASH_ATTENTION_INCRE_ANTIQUANT_ARCH35,
        "batch in (1, self.batch) and heads == 1)",
        "batch in (1, self.batch))",
        IFA95_INT8_TESTS,
    ),
    Mutation(
        "ifa95-int8-pfa-pse-rows-unchecked", FLASH_ATTENTION_INCRE_ANTIQUANT_ARCH35,
        "n != self.heads or s0 < self.s_q or",
        "n != self.heads or",
        IFA95_INT8_TESTS,
    ),
    Mutation("ifa95-int8-mask-keeps-merge", FLASH_ATTENTION_INCRE_ANTIQUANT_ARCH35, "if self.pfa and self.has_mask:", "if False:", IFA95_TESTS),
    Mutation(
        "ifa95-nz-cache-read-as-nd", FLASH_ATTENTION_INCRE_LAUNCH, "nz.transpose(0, 1, 3, 2, 4)", "nz.transpose(0, 1, 2, 3, 4)", IFA95_TESTS
    ),
    Mutation("ifa95-mla-value-read-with-key-d", FLASH_ATTENTION_INCRE_LAUNCH, 'getattr(p, "value_d", p.d)', "p.d", IFA95_TESTS),
    Mutation(
        "ifa95-kv-heads-never-refused", FLASH_ATTENTION_INCRE_LAUNCH_ARCH35,
        "ends = [s if p.padding is not None else n for n in p.lengths]",
        "ends = [0 for n in p.lengths]",
        IFA95_TESTS,
    ),
    Mutation(
        "ifa95-kv-heads-view-from-the-end", FLASH_ATTENTION_INCRE_LAUNCH_ARCH35,
        "else (lambda x: kernel_view(x, p.kv_shape))",
        "else (lambda x: kernel_view(x.reshape(-1)[x.size - int(np.prod(p.kv_shape)):], p.kv_shape))",
        IFA95_TESTS,
    ),
    Mutation(
        "pfa-pse-dropped",
        PFA,
        "            s += self.pse.block(b, n, i0, i1, c0, c1)\n",
        "            pass\n",
        IFA95_TESTS,
    ),
    # the decode loops of native.c: the generic loops (bf16, int8, fp16 at the baseline level or with
    # D not a multiple of 8), the AVX2/F16C path and the AVX-512 path
    Mutation(
        "native-decode-int8-offset-after-scale",
        NATIVE,
        "for (int64_t e = 0; e < d; ++e) to[e] = ((float)from[e] + shift[e]) * scale[e];",
        "for (int64_t e = 0; e < d; ++e) to[e] = (float)from[e] * scale[e] + shift[e];",
        IFA_TESTS,
    ),
    Mutation(
        "native-decode-fp16-generic-read-as-bf16",
        NATIVE,
        "for (int64_t e = 0; e < d; ++e) to[e] = fp16_value(from[e]);",
        "for (int64_t e = 0; e < d; ++e) to[e] = float_of((uint32_t)from[e] << 16);",
        IFA_TESTS + ("tests/test_native.py",),
    ),
    Mutation(
        "native-decode-scores-loops-fourth-row",
        NATIVE,
        "                to[3 * rows] = d3;",
        "                to[3 * rows] = d2;",
        IFA_TESTS,
    ),
    Mutation(
        "native-decode-values-loops-fourth-row",
        NATIVE,
        "                    o3[e] += w3 * row[e];",
        "                    o3[e] += w2 * row[e];",
        IFA_TESTS,
    ),
    Mutation(
        "native-scores-f16c-fourth-row",
        NATIVE,
        "a3 = _mm256_add_ps(a3, _mm256_mul_ps(_mm256_loadu_ps(qs[3] + e), k));",
        "a3 = _mm256_add_ps(a3, _mm256_mul_ps(_mm256_loadu_ps(qs[2] + e), k));",
        IFA_TESTS,
    ),
    Mutation(
        "native-values-f16c-last-row-dropped",
        NATIVE,
        "                for (int64_t j = 0; j < rows; ++j) {\n                    const uint16_t *row = base",
        "                for (int64_t j = 0; j < rows - 1; ++j) {\n                    const uint16_t *row = base",
        IFA_TESTS,
    ),
    Mutation(
        "native-values-avx512-last-row-dropped",
        NATIVE,
        "    for (int64_t j = 0; j < rows; ++j) {\n        const uint16_t *row = base + offsets[j];",
        "    for (int64_t j = 0; j < rows - 1; ++j) {\n        const uint16_t *row = base + offsets[j];",
        IFA_TESTS,
    ),
    Mutation(
        "native-values-avx512-d64-one-vector-short",
        NATIVE,
        "base + head_stride * h, offsets, rows, 4);",
        "base + head_stride * h, offsets, rows, 3);",
        IFA_TESTS,
    ),
    Mutation(
        "native-values-avx512-last-pair-second-dropped",
        NATIVE,
        "pair = g + 1 < groups;",
        "pair = g + 2 < groups;",
        IFA_TESTS,
    ),
    # --- LightningIndexer ----------------------------------------------------------------------
    Mutation(
        "li-values-half-even",
        LI,
        "values_out[r0:r1] = cast_round(values, values_out.dtype)",
        "values_out[r0:r1] = values",
        LI_TESTS,
    ),
    Mutation(
        "li-one-nan-value-per-step",
        LI,
        "        values_out[r0:r1] = cast_round(",
        "        values[0, 0] = np.nan\n        values_out[r0:r1] = cast_round(",
        LI_TESTS,
    ),
    Mutation(
        "li-one-index-zeroed-per-step",
        LI,
        "    indices_out[r0:r1, :cols] = idx[:, :cols]\n",
        "    indices_out[r0:r1, :cols] = idx[:, :cols]\n    indices_out[r0, 0] = 0\n",
        LI_TESTS,
    ),
    Mutation(
        "li-two-indices-swapped-per-step",
        LI,
        "    indices_out[r0:r1, :cols] = idx[:, :cols]\n",
        "    indices_out[r0:r1, :cols] = idx[:, :cols]\n    indices_out[r0, :2] = indices_out[r0, 1::-1].copy()\n",
        LI_TESTS,
    ),
    Mutation("li-ties-index-order-everywhere", LI, "small = rows.seq_q[r0] <= SMALL_BATCH", "small = True", LI_TESTS),
    Mutation("li-ties-block-order-everywhere", LI, "small = rows.seq_q[r0] <= SMALL_BATCH", "small = False", LI_TESTS),
    Mutation(
        "li-small-batch-off-by-one",
        LI,
        "small = rows.seq_q[r0] <= SMALL_BATCH",
        "small = rows.seq_q[r0] < SMALL_BATCH",
        LI_TESTS,
    ),
    Mutation(
        "li-head-sum-in-head-order",
        LI,
        "    np.maximum(s, 0, out=s)\n    s *= w[:, :, None]\n",
        "    np.maximum(s, 0, out=s)\n    s *= w[:, :, None]\n    return s.sum(axis=1, dtype=FP32)\n",
        LI_TESTS,
    ),
    Mutation(
        "li-valid-keys-one-more",
        LI,
        "order[np.arange(c0, c1)[None, :] >= valid[:, None]] = PAD",
        "order[np.arange(c0, c1)[None, :] > valid[:, None]] = PAD",
        LI_TESTS,
    ),
    Mutation(
        "li-causal-count-off-by-one",
        K + "sparse_attention/lightning_indexer_plan.py",
        "np.asarray(seq_q, np.int64) + s1 + 1, 0, top_k)",
        "np.asarray(seq_q, np.int64) + s1, 0, top_k)",
        LI_TESTS + LIG_TESTS,
    ),
    Mutation(
        "li-padding-index-zero",
        LI,
        "return np.where(pad, -1, idx).astype(np.int32), score",
        "return np.where(pad, 0, idx).astype(np.int32), score",
        LI_TESTS,
    ),
    Mutation("li-padding-value-zero", LI, "    score[pad] = -np.inf\n", "    score[pad] = 0\n", LI_TESTS),
    Mutation(
        "li-paged-offset-off-by-one",
        K + "sparse_attention/key_rows.py",
        "self.table[batch][block] * self.block_size + positions % self.block_size",
        "self.table[batch][block] * self.block_size + (positions + 1) % self.block_size",
        LI_TESTS,
    ),
    # --- SparseFlashAttention ------------------------------------------------------------------
    Mutation(
        "sfa-P-half-even",
        SFA,
        "            round_half_away_(p, dtype)\n",
        "            p[...] = p.astype(dtype)\n",
        SFA_TESTS,
    ),
    Mutation("sfa-P-unrounded", SFA, "            round_half_away_(p, dtype)\n", "            pass\n", SFA_TESTS),
    Mutation(
        "sfa-sum-of-rounded-P",
        SFA,
        "            l = l * factor + p.sum(axis=2, dtype=FP32)\n            round_half_away_(p, dtype)\n",
        "            round_half_away_(p, dtype)\n            l = l * factor + p.sum(axis=2, dtype=FP32)\n",
        SFA_TESTS,
    ),
    Mutation(
        "sfa-bf16-output-half-away",
        SFA,
        "narrow = cast_rint if x.q.dtype == BF16 else cast_round",
        "narrow = cast_round",
        SFA_TESTS,
    ),
    Mutation(
        "sfa-fp16-output-half-even",
        SFA,
        "narrow = cast_rint if x.q.dtype == BF16 else cast_round",
        "narrow = cast_rint",
        SFA_TESTS,
    ),
    Mutation(
        "sfa-one-nan-per-head", SFA, "    o[empty] = 0\n", "    o[empty] = 0\n    o[0, :, 0] = np.nan\n", SFA_TESTS
    ),
    Mutation("sfa-one-zero-per-head", SFA, "    o[empty] = 0\n", "    o[empty] = 0\n    o[0, :, -1] = 0\n", SFA_TESTS),
    Mutation(
        "sfa-softmax-max-one-nan",
        SFA,
        "        outputs.softmax_max[r0:r1] = m\n",
        "        outputs.softmax_max[r0:r1] = m\n        outputs.softmax_max[r0, 0] = np.nan\n",
        SFA_TESTS,
    ),
    Mutation(
        "sfa-softmax-sum-one-zero",
        SFA,
        "        outputs.softmax_sum[r0:r1] = l\n",
        "        outputs.softmax_sum[r0:r1] = l\n        outputs.softmax_sum[r0, -1] = 0\n",
        SFA_TESTS,
    ),
    Mutation(
        "sfa-empty-row-max-inf",
        SFA,
        "m[empty], l[empty] = SOFTMAX_MIN, 0",
        "m[empty], l[empty] = -np.inf, 0",
        SFA_TESTS,
    ),
    Mutation(
        "sfa-scan-limit-off-by-one",
        SFA,
        "limit = sp.sk - sp.sq + sp.s1 + 1 if x.causal else sp.sk",
        "limit = sp.sk - sp.sq + sp.s1 if x.causal else sp.sk",
        SFA_TESTS,
    ),
    Mutation(
        "sfa-causal-limit-one-short",
        SFA,
        "limit = sp.sk[r] - sp.sq[r] + sp.s1[r] + 1 if x.causal",
        "limit = sp.sk[r] - sp.sq[r] + sp.s1[r] if x.causal",
        SFA_TESTS,
    ),
    Mutation(
        "sfa-causal-limit-one-past",
        SFA,
        "limit = sp.sk[r] - sp.sq[r] + sp.s1[r] + 1 if x.causal",
        "limit = sp.sk[r] - sp.sq[r] + sp.s1[r] + 2 if x.causal",
        SFA_TESTS,
    ),
    Mutation(
        "sfa-minus-one-padding-used",
        SFA,
        "return pos, (pos >= 0) & (pos < limit)",
        "return pos, (pos >= -1) & (pos < limit)",
        SFA_TESTS,
    ),
    Mutation("sfa-chunk-256", SFA, "CHUNK = 512 ", "CHUNK = 256 ", SFA_TESTS),
    Mutation(
        "sfa-paged-offset-off-by-one",
        K + "sparse_attention/key_rows.py",
        "self.table[batch][block] * self.block_size + positions % self.block_size",
        "self.table[batch][block] * self.block_size + (positions + 1) % self.block_size",
        SFA_TESTS,
    ),
    # --- KV cache ------------------------------------------------------------------------------
    Mutation(
        "kv-compress-mean-half-away",
        K + "kv_cache/scatter_rows.py",
        "    return cast_rint(total / np.float32(divisor), window.dtype)",
        "    from ..casts import cast_round\n    return cast_round(total / np.float32(divisor), window.dtype)",
        KV_TESTS,
    ),
    Mutation(
        "kv-integer-mean-floors",
        K + "kv_cache/scatter_rows.py",
        "quotient = np.abs(total) // divisor * np.sign(total)",
        "quotient = total // divisor",
        KV_TESTS,
    ),
    Mutation(
        "kv-gather-block-off-by-one",
        K + "kv_cache/gather.py",
        "            block, read = table(_int_array(b * cols + shift + k))",
        "            block, read = table(_int_array(b * cols + shift + k + 1))",
        KV_TESTS,
    ),
    Mutation(
        "kv-scatter-last-token-dropped",
        K + "kv_cache/scatter_a2.py",
        "        writes.add(slots, token, cores)\n",
        "        writes.add(slots[:-1], token[:-1], cores[:-1])\n",
        KV_TESTS,
    ),
    Mutation(
        "native-copy-pieces-short-nz-piece",
        NATIVE,
        "for (int64_t k = 0; k < count; ++k) memcpy(t + k * dst_step, f + k * src_step, 32);",
        "for (int64_t k = 0; k < count; ++k) memcpy(t + k * dst_step, f + k * src_step, 30);",
        KV_TESTS + ("tests/test_native.py",),
    ),
    Mutation(
        "native-streaming-copy-one-line-short",
        NATIVE,
        "        for (int64_t i = 0; i < n; i += 64) {",
        "        for (int64_t i = 0; i < n - 64; i += 64) {",
        KV_TESTS + ("tests/test_native.py", "tests/test_serving_loop.py"),
    ),
    Mutation(
        "native-copy-whole-row-run-one-piece-short",
        NATIVE,
        "copy_bytes(to, from, count * piece_bytes, stream);",
        "copy_bytes(to, from, (count - 1) * piece_bytes, stream);",
        KV_TESTS + ("tests/test_native.py", "tests/test_serving_loop.py"),
    ),
    Mutation(
        "matmul-one-chain-over-all-of-k",
        K + "matmul.c",
        "#define CHUNK 32",
        "#define CHUNK (1 << 30)",
        ("tests/test_native.py",),
    ),
    Mutation(
        "matmul-window-one-column-short",
        K + "matmul.c",
        "tile + r * PANEL + lo, (size_t)(hi - lo)",
        "tile + r * PANEL + lo, (size_t)(hi - lo - 1)",
        PFA_TESTS + ("tests/test_native.py",),
    ),
    Mutation(
        "native-fp16-normal-exponentials-from-too-far-down",
        NATIVE,
        "#define FP16_NORMAL_EXP_LOW -9.5f",
        "#define FP16_NORMAL_EXP_LOW -11.0f",
        ("tests/test_native.py",),
    ),
    Mutation(
        "matmul-pack-bf16-read-as-fp16",
        K + "matmul.c",
        "if (kind == 1) return float_of(",
        "if (kind == 9) return float_of(",
        ("tests/test_native.py",),
    ),
    Mutation(
        "native-softmax-group-takes-its-first-rows-sum",
        NATIVE,
        "row_sum[i] * alpha[i] + sums[i - i0];",
        "row_sum[i] * alpha[i] + sums[0];",
        ("tests/test_native.py",),
    ),
    Mutation(
        "matmul-pair-tiles-one-short",
        K + "matmul.c",
        "(rest + MR_PAIR - 1) / MR_PAIR",
        "(rest + MR_PAIR - 2) / MR_PAIR",
        ("tests/test_native.py",),
    ),
    Mutation(
        "matmul-pair-tile-second-row-of-the-first",
        K + "matmul.c",
        "ld_rows = count == MR_PAIR ? lda : 0;",
        "ld_rows = 0;",
        ("tests/test_native.py",),
    ),
    Mutation(
        "native-split-exp-reduced-without-low-ln2",
        NATIVE,
        "        x[j] = exp_argument(y, t[j] - 12582912.0f);",
        "        x[j] = fmaf(t[j] - 12582912.0f, -0.693359375f, y);",
        ("tests/test_native.py",),
    ),
    Mutation(
        "native-store-f16c-subnormals-converted-to-even",
        NATIVE,
        "_mm256_cmp_ps(a, smallest, _CMP_NGE_UQ)",
        "_mm256_cmp_ps(a, a, _CMP_UNORD_Q)",
        ("tests/test_native.py", "tests/test_rounding.py"),
    ),
    Mutation(
        "native-store-f16c-even-nans-converted",
        NATIVE,
        "rounding == FP16_EVEN ? _mm256_cmp_ps(v, v, _CMP_UNORD_Q)",
        "rounding == FP16_EVEN ? _mm256_setzero_ps()",
        ("tests/test_native.py",),
    ),
    Mutation(
        "pfa-output-store-ties-away",
        K + "flash_attention/prompt_flash_attention.py",
        '"fp16_away" if self.fp16_out_away else "fp16_even"',
        '"fp16_away"',
        PFA_TESTS,
    ),
    Mutation(
        "native-store-f16c-truncated",
        NATIVE,
        "_mm256_add_epi32(_mm256_castps_si256(v), half)",
        "_mm256_castps_si256(v)",
        ("tests/test_native.py", "tests/test_rounding.py"),
    ),
    Mutation(
        "attention-blocks-unseen-rows-kept",
        K + "attention_blocks.c",
        "            if (zero_unseen)\n",
        "            if (0)\n",
        ("tests/test_native.py",),
    ),
    Mutation(
        "attention-blocks-first-block-rescaled",
        K + "attention_blocks.c",
        "int fresh = !acc_set && b == 0;",
        "int fresh = !acc_set && b == 1;",
        ("tests/test_native.py",),
    ),
    Mutation(
        "native-scatter-add-rows-repeat-added-once",
        NATIVE,
        "        float *to = acc + pos[i] * acc_stride;\n",
        "        int seen = 0;\n        for (int64_t k = 0; k < i; ++k) seen |= pos[k] == pos[i];\n"
        "        if (seen) continue;\n        float *to = acc + pos[i] * acc_stride;\n",
        SFAG_TESTS + LIG_TESTS + ("tests/test_native.py",),
    ),
    Mutation(
        "native-scatter-add-rows-adjacent-repeat-skipped",
        NATIVE,
        "        float *to = acc + pos[i] * acc_stride;\n",
        "        if (i && pos[i] == pos[i - 1]) continue;\n        float *to = acc + pos[i] * acc_stride;\n",
        SFAG_TESTS + LIG_TESTS + ("tests/test_native.py",),
    ),
    # --- shared rounding loops -----------------------------------------------------------------
    Mutation(
        "native-bf16-away-to-even",
        NATIVE,
        "return float_of((bits_of(x) + 0x8000u) & 0xFFFF0000u);",
        "return float_of((bits_of(x) + 0x7FFFu + ((bits_of(x) >> 16) & 1u)) & 0xFFFF0000u);",
        FAG_TESTS + PFA_TESTS + SFAG_TESTS + ROUNDING_TESTS,
    ),
    Mutation(
        "native-fp16-away-to-even",
        NATIVE,
        "return float_of((bits_of(a) + 0x1000u) & 0xFFFFE000u);",
        "return float_of((bits_of(a) + 0xFFFu + ((bits_of(a) >> 13) & 1u)) & 0xFFFFE000u);",
        FAG_TESTS + SFAG_TESTS + ROUNDING_TESTS,
    ),
    Mutation(
        "native-fp16-away-subnormal-ties-even",
        NATIVE,
        "    nearest += steps - nearest == 0.5f ? 1.0f : 0.0f;                       /* ties away */\n",
        "",
        ROUNDING_TESTS,
    ),
    Mutation(
        "casts-bf16-cast-round-even",
        K + "casts.py",
        "rounded = ((bits + np.uint32(0x8000)) & np.uint32(0xFFFF0000)).view(np.float32)",
        "rounded = ((bits + np.uint32(0x7FFF) + ((bits >> 16) & 1)) & np.uint32(0xFFFF0000)).view(np.float32)",
        LIG_TESTS + ROUNDING_TESTS,
    ),
]
