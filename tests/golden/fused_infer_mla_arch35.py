"""Float64 reference of FusedInferAttentionScore's rope calls on Ascend910_95, written from
docs/design/fused_infer_attention_score.md ("MLA rope on Ascend910_95's PFA route").

PromptFlashAttentionTilingV2 runs them on its own kernels with the query and its rope as one head
against the key and its rope: Q·Kᵀ + Qr·Krᵀ is one fp32 product (IFA MLA: K = 576 in
`flash_attention_kvsame_bn2gs1s2.h`; PFARope: the D-192 config), then the arch35 softmax and casts of
golden.prompt_flash_attention (``high_precision``): fp32 scores, P to the input dtype nearest even,
the output ties away. IFA MLA walks keys in its config's S2 blocks of 128
(S1Aligned64_S2Aligned128_DAligned576_DVAligned512); PFARope in the PFA kernels' blocks.
"""

import numpy as np

from golden import prompt_flash_attention as pfa

IFA_MLA_KV_BLOCK = 128


def attention(q, q_rope, k, k_rope, v, *, kv_block=IFA_MLA_KV_BLOCK, **kw):
    """[B, N, S1, Dv] float64 for q [B, N, S1, D], q_rope [B, N, S1, 64], k [B, Nkv, S2, D],
    k_rope [B, Nkv, S2, 64], v [B, Nkv, S2, Dv]; ``kw`` as golden.prompt_flash_attention.attention."""
    joined_q = np.concatenate([q, q_rope], axis=-1)
    joined_k = np.concatenate([k, k_rope], axis=-1)
    return pfa.attention(joined_q, joined_k, v, high_precision=True, kv_block=kv_block, **kw)
