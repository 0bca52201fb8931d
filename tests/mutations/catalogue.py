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
NATIVE = K + "native.c"

FAG_TESTS = ("tests/test_flash_attention_score_grad.py", "tests/test_flash_attention_score_grad_cabi.py")
PFA_TESTS = ("tests/test_prompt_flash_attention.py", "tests/test_prompt_flash_attention_cabi.py",
             "tests/test_prompt_flash_attention_kernel.py")
SFAG_TESTS = ("tests/test_sparse_flash_attention_grad.py", "tests/test_sparse_flash_attention_grad_cabi.py")
LIG_TESTS = ("tests/test_lightning_indexer_grad.py", "tests/test_lightning_indexer_grad_kernel.py",
             "tests/test_lightning_indexer_grad_cabi.py")
KV_TESTS = ("tests/test_scatter_pa_kv_cache.py", "tests/test_scatter_pa_kv_cache_kernel.py",
            "tests/test_scatter_pa_kv_cache_cabi.py", "tests/test_gather_pa_kv_cache.py",
            "tests/test_gather_pa_kv_cache_cabi.py")
ROUNDING_TESTS = ("tests/test_rounding.py", "tests/test_native.py")

MUTATIONS = [
    # --- FlashAttentionScoreGrad ---------------------------------------------------------------
    Mutation("fag-P-half-even", FAG, "native.round_product(dropped, probs, keep, self.rounding)",
             "dropped[...] = (probs if keep is None else probs * keep).astype(self.dtype)", FAG_TESTS),
    Mutation("fag-P-unrounded", FAG, "native.round_product(dropped, probs, keep, self.rounding)",
             "native.round_product(dropped, probs, keep, None)", FAG_TESTS),
    Mutation("fag-dS-half-even", FAG, "native.softmax_grad_(grad, probs, head.dsum[i0:i1], keep, self.rounding)",
             "native.softmax_grad_(grad, probs, head.dsum[i0:i1], keep, None); grad[...] = grad.astype(self.dtype)",
             FAG_TESTS),
    Mutation("fag-dS-unrounded", FAG, "native.softmax_grad_(grad, probs, head.dsum[i0:i1], keep, self.rounding)",
             "native.softmax_grad_(grad, probs, head.dsum[i0:i1], keep, None)", FAG_TESTS),
    Mutation("fag-outputs-half-even", FAG, "    return round_half_away_(x, dtype).astype(dtype)",
             "    return x.astype(dtype)", FAG_TESTS),
    Mutation("fag-one-nan-per-head-dq", FAG, "        dq_rows *= self.scale\n",
             "        dq_rows *= self.scale\n        if i0 == 0:\n            dq_rows[0, 0] = np.nan\n", FAG_TESTS),
    Mutation("fag-one-zero-per-kv-head-dk", FAG, "                    acc_k *= self.scale\n",
             "                    acc_k *= self.scale\n                    acc_k[0, 0] = 0\n", FAG_TESTS),
    Mutation("fag-pse-type1-after-scale", K + "flash_attention/pse.py",
             "return self.pse is not None and self.type == 1", "return False", FAG_TESTS),
    Mutation("fag-band-next-off-by-one", K + "attention/masks.py", "return (offset > next_) | (offset < -pre)",
             "return (offset > next_ + 1) | (offset < -pre)", FAG_TESTS + PFA_TESTS),
    Mutation("fag-mode3-off-by-one", K + "flash_attention/sparse_modes.py", "3: (UNBOUNDED, shift),",
             "3: (UNBOUNDED, shift - 1),", FAG_TESTS),
    Mutation("fag-lanes-first-only", FAG, "        replicated = all((x == x[:, :1]).all() for x in lanes)\n",
             "        replicated = True\n", FAG_TESTS),
    Mutation("fag-fully-masked-rows-zero", FAG, "fill = np.exp(NEG_FLT_MAX - lanes_max) / lanes_sum",
             "fill = np.zeros_like(lanes_max)", FAG_TESTS),

    # --- PromptFlashAttention ------------------------------------------------------------------
    Mutation("pfa-fp16-scores-unrounded", PFA, "self.fp16_scores = q.dtype in (FP16, INT8)",
             "self.fp16_scores = q.dtype == INT8", PFA_TESTS),
    Mutation("pfa-scores-half-away", NATIVE, "        if (fp16) v = round_fp16(v);",
             "        if (fp16) v = round_fp16_half_away(v);", PFA_TESTS),
    Mutation("pfa-fp16-P-half-away", PFA, 'if q.dtype == BF16 else "fp16_even"',
             'if q.dtype == BF16 else "fp16_away"', PFA_TESTS),
    Mutation("pfa-fp16-P-unrounded", PFA, 'if q.dtype == BF16 else "fp16_even"', 'if q.dtype == BF16 else None',
             PFA_TESTS),
    Mutation("pfa-bf16-P-unrounded", PFA, 'self.rounding = "bf16_away" if', 'self.rounding = None if',
             PFA_TESTS),
    Mutation("pfa-bf16-output-half-even", PFA, "            round_half_away_(o, BF16)\n", "            pass\n",
             PFA_TESTS),
    Mutation("pfa-fp16-output-half-away", PFA, "            native.narrow_fp16(out, o)",
             "            out[...] = round_half_away_(o, FP16)", PFA_TESTS),
    Mutation("pfa-int8-quantise-half-away", K + "flash_attention/quant.py", "    np.rint(x, out=x)\n",
             "    np.copysign(np.floor(np.abs(x) + 0.5), x, out=x)\n", PFA_TESTS),
    Mutation("pfa-int8-PV-unrounded", PFA, "native.scale_(e @ values, pre=self.int8.deq2, fp16=True)",
             "native.scale_(e @ values, pre=self.int8.deq2, fp16=False)", PFA_TESTS),
    Mutation("pfa-deq-scale-untruncated", K + "flash_attention/quant.py", "_HIGH_19_BITS = np.uint32(0xFFFFE000)",
             "_HIGH_19_BITS = np.uint32(0xFFFFFFFF)", PFA_TESTS),
    Mutation("pfa-fp16-mask-fill-inf", PFA, "FP16_MASK_FILL = np.float32(-65504.0)",
             "FP16_MASK_FILL = np.float32(-np.inf)", PFA_TESTS),
    Mutation("pfa-kv-block-512", PFA, "KV_BLOCK = 1024 ", "KV_BLOCK = 512 ", PFA_TESTS),
    Mutation("pfa-one-nan-per-head", PFA, "        o[~computed] = 0\n",
             "        o[~computed] = 0\n        o[0, 0] = np.nan\n", PFA_TESTS),
    Mutation("pfa-one-zero-per-head", PFA, "        o[~computed] = 0\n",
             "        o[~computed] = 0\n        o[0, -1] = 0\n", PFA_TESTS),
    Mutation("pfa-band-start-off-by-one", K + "attention/masks.py", "    j0 = min(max(i0 - pre, 0), s2)",
             "    j0 = min(max(i0 - pre + 1, 0), s2)", PFA_TESTS),
    Mutation("pfa-int8-saturates-at-127", K + "flash_attention/quant.py", "return np.clip(x, -128, 127, out=x)",
             "return np.clip(x, -127, 127, out=x)", PFA_TESTS),

    # --- SparseFlashAttentionGrad --------------------------------------------------------------
    Mutation("sfag-P-half-even", SFAG, "p_h, ds_h = round_half_away_(p, half), round_half_away_(ds, half)",
             "p_h, ds_h = p.astype(half).astype(FP32), round_half_away_(ds, half)", SFAG_TESTS),
    Mutation("sfag-dS-half-even", SFAG, "p_h, ds_h = round_half_away_(p, half), round_half_away_(ds, half)",
             "p_h, ds_h = round_half_away_(p, half), ds.astype(half).astype(FP32)", SFAG_TESTS),
    Mutation("sfag-dS-unrounded", SFAG, "p_h, ds_h = round_half_away_(p, half), round_half_away_(ds, half)",
             "p_h, ds_h = round_half_away_(p, half), ds", SFAG_TESTS),
    Mutation("sfag-outputs-half-even", SFAG, "    round_half_away_(values, main.dtype)        # in place",
             "    pass        # in place", SFAG_TESTS),
    Mutation("sfag-one-nan-per-row-block-dq", SFAG, "                _store(dqc * self.scale, self.grads.dq[rows], dq_rope)",
             "                dqc[0, 0, 0] = np.nan\n                _store(dqc * self.scale, self.grads.dq[rows], dq_rope)",
             SFAG_TESTS),
    Mutation("sfag-one-zero-dk", SFAG, "        _store(sums.k * x.scale, grads.dk, grads.dk_rope)",
             "        sums.k[np.argmax(np.abs(sums.k).max(axis=1))] = 0\n"
             "        _store(sums.k * x.scale, grads.dk, grads.dk_rope)", SFAG_TESTS),
    Mutation("sfag-duplicates-added-once", SFAG, "            _scatter_add(self.k, pos, dkc)",
             "            self.k[pos] += dkc", SFAG_TESTS),
    Mutation("sfag-diagonal-mask-off-by-one", K + "sparse_attention/select.py",
             "    keep = valid_end - diag * bs + 1", "    keep = valid_end - diag * bs + 2", SFAG_TESTS),

    # --- LightningIndexerGrad ------------------------------------------------------------------
    Mutation("lig-dweights-half-even", LIG, "job.dweights[r0:r1] = cast_round(", "job.dweights[r0:r1] = cast_rint(",
             LIG_TESTS),
    Mutation("lig-dk-half-even", LIG, "    dk[...] = cast_round(total, dtype)", "    dk[...] = cast_rint(total, dtype)",
             LIG_TESTS),
    Mutation("lig-dq-half-away", LIG, "job.dq[r0:r1] = cast_rint(", "job.dq[r0:r1] = cast_round(", LIG_TESTS),
    Mutation("lig-Y-unrounded", LIG, "        np.copyto(grad, narrow)\n", "", LIG_TESTS),
    Mutation("lig-Y-half-away", LIG, "        np.copyto(grad, narrow)\n",
             "        grad[...] = cast_round(grad, job.dtype)\n", LIG_TESTS),
    Mutation("lig-relu-grad-at-zero-one", LIG, "positive = np.greater(relu, 0, out=relu)",
             "positive = np.greater_equal(relu, 0, out=relu)", LIG_TESTS),
    Mutation("lig-duplicates-added-once", LIG, "                np.add.at(self.dk, keep, contrib)",
             "                self.dk[keep] += contrib", LIG_TESTS),
    Mutation("lig-one-nan-per-chunk-dq", LIG, "        contrib = np.matmul(",
             "        job.dq[r0, 0, 0] = np.nan\n        contrib = np.matmul(", LIG_TESTS),
    Mutation("lig-one-zero-dk", LIG, "    dk[...] = cast_round(total, dtype)",
             "    total[np.argmax(np.abs(total).max(axis=1))] = 0\n    dk[...] = cast_round(total, dtype)",
             LIG_TESTS),

    # --- KV cache ------------------------------------------------------------------------------
    Mutation("kv-compress-mean-half-away", K + "kv_cache/scatter_rows.py",
             "    return cast_rint(total / np.float32(divisor), window.dtype)",
             "    from ..casts import cast_round\n    return cast_round(total / np.float32(divisor), window.dtype)",
             KV_TESTS),
    Mutation("kv-integer-mean-floors", K + "kv_cache/scatter_rows.py",
             "quotient = np.abs(total) // divisor * np.sign(total)", "quotient = total // divisor", KV_TESTS),
    Mutation("kv-gather-block-off-by-one", K + "kv_cache/gather.py",
             "            block, read = table(_int_array(b * cols + shift + k))",
             "            block, read = table(_int_array(b * cols + shift + k + 1))", KV_TESTS),

    Mutation("kv-scatter-last-token-dropped", K + "kv_cache/scatter_a2.py",
             "        writes.add(slots, token, cores)\n", "        writes.add(slots[:-1], token[:-1], cores[:-1])\n",
             KV_TESTS),
    Mutation("native-copy-pieces-short-nz-piece", NATIVE,
             "for (int64_t k = 0; k < count; ++k) memcpy(t + k * dst_step, f + k * src_step, 32);",
             "for (int64_t k = 0; k < count; ++k) memcpy(t + k * dst_step, f + k * src_step, 30);",
             KV_TESTS + ("tests/test_native.py",)),

    # --- shared rounding loops -----------------------------------------------------------------
    Mutation("native-bf16-away-to-even", NATIVE, "float rounded = float_of((bits_of(x) + 0x8000u) & 0xFFFF0000u);",
             "float rounded = float_of((bits_of(x) + 0x7FFFu + ((bits_of(x) >> 16) & 1u)) & 0xFFFF0000u);",
             FAG_TESTS + PFA_TESTS + SFAG_TESTS + ROUNDING_TESTS),
    Mutation("native-fp16-away-to-even", NATIVE, "float normal = float_of((bits_of(a) + 0x1000u) & 0xFFFFE000u);",
             "float normal = float_of((bits_of(a) + 0xFFFu + ((bits_of(a) >> 13) & 1u)) & 0xFFFFE000u);",
             FAG_TESTS + SFAG_TESTS + ROUNDING_TESTS),
    Mutation("native-fp16-away-subnormal-ties-even", NATIVE,
             "    nearest += steps - nearest == 0.5f ? 1.0f : 0.0f;                       /* ties away */\n", "",
             ROUNDING_TESTS),
    Mutation("casts-bf16-cast-round-even", K + "casts.py",
             "rounded = ((bits + np.uint32(0x8000)) & np.uint32(0xFFFF0000)).view(np.float32)",
             "rounded = ((bits + np.uint32(0x7FFF) + ((bits >> 16) & 1)) & np.uint32(0xFFFF0000)).view(np.float32)",
             LIG_TESTS + ROUNDING_TESTS),
]
