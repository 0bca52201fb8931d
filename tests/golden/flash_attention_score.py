"""Float64 reference for aclnnFlashAttentionScoreV2, from the docs and the forward kernel's source
(op_kernel/arch32/flash_attention_score_s1s2_bn2gs1.h): whole S1 x S2 matrices per head, no code
shared with the emulator's kernel. The masks, pse and dropout decoding are the backward golden's
(tests/golden/flash_attention_score_grad.py), so both directions are judged by one reading of them.

The hardware rounds P = exp(S - max) to the input dtype (CAST_ROUND) before P·V, so the reference
does too, and `floor` gives each output element the scale of its terms, Σ_j P|V| (a small-value
region scaled to the data; tests/precision.py).
"""

import numpy as np

from golden.flash_attention_score_grad import (
    FLT_MAX,
    _heads,
    _scores,
    drop_factors,
    heads_back,
    masked_set,
    pse_matrix,
    round_half_away,
)


def forward(
    query,
    key,
    value,
    *,
    scale,
    head_num,
    layout,
    dtype_name,
    pse=None,
    pse_type=1,
    atten_mask=None,
    sparse_mode=0,
    pre_tokens=2147483647,
    next_tokens=2147483647,
    prefix=None,
    drop_mask=None,
    keep_prob=1.0,
    q_start_idx=None,
    kv_start_idx=None,
    invalid_line=False,
):
    """(attention_out in layout, softmax_max [B,N1,S1,8], softmax_sum [B,N1,S1,8], floor) in float64.

    Rows whose every score is masked: with `invalid_line` the output is 0 and the sum FLT_MAX,
    otherwise every key gets P = 1 (the output is the mean of V, the sum S2); the max is -FLT_MAX."""
    q, k, v = _heads(query, key, value, layout, head_num)
    b, n1, s1, _ = q.shape
    g, s2 = n1 // k.shape[1], k.shape[2]
    drop = drop_factors(drop_mask, keep_prob, b, n1, s1, s2)
    out, floor = np.zeros((b, n1, s1, v.shape[3])), np.zeros((b, n1, s1, v.shape[3]))
    row_max, row_sum = np.zeros((b, n1, s1)), np.zeros((b, n1, s1))
    for bi in range(b):
        for ni in range(n1):
            masked = masked_set(sparse_mode, atten_mask, bi, ni, s1, s2, pre_tokens, next_tokens, prefix)
            pse_term = pse_matrix(pse, pse_type, bi, ni, s1, s2, q_start_idx, kv_start_idx)
            s = _scores(q[bi, ni], k[bi, ni // g], pse_term, pse_type, scale, masked)
            mx = s.max(axis=1)
            e = np.exp(s - mx[:, None])
            total = e.sum(axis=1)
            if invalid_line:
                dead = mx == -FLT_MAX
                e[dead] = 0
                total[dead] = FLT_MAX
            p = round_half_away(e if drop is None else e * drop[bi, ni], dtype_name)
            vv = v[bi, ni // g]
            out[bi, ni] = p @ vv / total[:, None]
            floor[bi, ni] = np.abs(p) @ np.abs(vv) / total[:, None]
            row_max[bi, ni], row_sum[bi, ni] = mx, total
    lanes = (b, n1, s1, 8)
    return (
        heads_back(out, layout),
        np.broadcast_to(row_max[..., None], lanes),
        np.broadcast_to(row_sum[..., None], lanes),
        heads_back(floor, layout),
    )
