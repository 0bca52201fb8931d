/* One block of the attention backward (flash_attention_score_grad.py), query rows x key block, in
 * one call: the steps the Python driver used to make one by one, with their temporaries.
 *
 *   S   = Q Kᵀ, with the scale and the pse as the Python steps apply them; P = exp(S - m) / l;
 *         masked scores take their row's fill value
 *   Pd  = round(P * keep)                       dV += Pdᵀ dY
 *   dP  = dY Vᵀ     dS = round(P * (dP * keep - D))
 *   dQ += dS K      dK += dSᵀ Q
 *
 * S, P and dP go through in chunks of rows (chunk_rows) whose scores stay in L2 between the steps.
 * The matmuls' sums do not depend on how many rows a call takes, and the three products that sum
 * over the block's rows or keys (dV, dK, dQ) still take the whole block at once, so every bit is
 * that of the step-by-step calls.
 */
#include "native.h"

/* Rows per chunk of S and dP, in whole tiles of six rows: a chunk's scores fill at most an eighth of
   L2, and its rows of Q or dY (d floats each) half of L1, where they stay while the key panels pass
   (measured at AVX2: 5 % faster than rows up to L2's share alone). */
static int64_t chunk_rows(int64_t ld, int64_t d) {
    int64_t rows = aclemu_l2_bytes / 8 / (ld * (int64_t)sizeof(float));
    int64_t l1_rows = aclemu_l1_bytes / 2 / (d * (int64_t)sizeof(float));
    rows = (rows < l1_rows ? rows : l1_rows) / 6 * 6;
    return rows < 6 ? 6 : rows;
}

static int64_t widest(int64_t a, int64_t b) { return a > b ? a : b; }

/* Floats of `work` aclemu_attention_grad_block needs for a block of rows x cols and head dims d
   and dv: Pd and dS of the block, one chunk's P, and the matmuls' scratch. */
int64_t aclemu_attention_grad_work(int64_t rows, int64_t cols, int64_t d, int64_t dv) {
    int64_t ld = cols + ROW_PAD;
    return (2 * rows + chunk_rows(ld, widest(d, dv))) * ld +
           aclemu_matmul_scratch(widest(widest(rows, cols), widest(d, dv)));
}

/* The block of query rows [0, rows) (q [rows, d] and dy [rows, dv], contiguous; their packed rows
   q_rows and dy_rows as right-hand operands) against keys [c0, c0 + cols) of the packed Kᵀ kt
   (d x keys), K k (keys x d) and Vᵀ vt (dv x keys); panel_stride[5] gives the panel strides of kt,
   k, vt, q_rows and dy_rows in that order.
     S = Q Kᵀ; with pse (fp32 [rows, cols]): pse_first ? (S + pse) * scale : S * scale + pse, else
         S * scale;
     P = exp(S - m) / l, from row_max and row_sum ([rows, lanes], column j reads lane
         (c0 + j) % lanes); where masked ([rows, cols], may be NULL), P = fill ([rows, lanes]);
     Pd = round(P * keep) (keep [rows, cols] or NULL; round: `rounding`);
     acc_v[c0 + j] += (Pdᵀ dY)[j]                (acc_v [keys, dv])
     dS = round(P * (dY Vᵀ * keep - dsum))
     dq += dS K                                  (dq [rows, d])
     acc_k[c0 + j] += (dSᵀ Q)[j]                 (acc_k [keys, d])
   Each product is added as a whole. `work` holds aclemu_attention_grad_work(rows, cols, d, dv) floats. */
void aclemu_attention_grad_block(const float *q, const float *dy, int64_t rows, int64_t d, int64_t dv,
                                 const float *kt, const float *k, const float *vt, const float *q_rows,
                                 const float *dy_rows, const int64_t *panel_stride, int64_t c0, int64_t cols,
                                 const float *row_max, const float *row_sum, int64_t lanes, const float *dsum,
                                 float scale, const float *pse, int pse_first, const uint8_t *masked,
                                 const float *fill, const float *keep, int rounding, float *dq, float *acc_k,
                                 float *acc_v, float *work) {
    int64_t ld = cols + ROW_PAD, chunk = chunk_rows(ld, widest(d, dv));
    float *dropped = work, *grad = dropped + rows * ld, *probs = grad + rows * ld, *scratch = probs + chunk * ld;
    int64_t lane0 = c0 % lanes;
    for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
        int64_t count = rows - r0 < chunk ? rows - r0 : chunk;
        aclemu_matmul_panels(probs, ld, q + r0 * d, d, count, d, kt, panel_stride[0], c0, cols, scratch, 0);
        aclemu_matmul_panels(grad + r0 * ld, ld, dy + r0 * dv, dv, count, dv, vt, panel_stride[2], c0, cols,
                             scratch, 0);
        for (int64_t i = 0; i < count; ++i) {
            int64_t row = r0 + i;
            aclemu_grad_scores_row(probs + i * ld, pse ? pse + row * cols : NULL, scale, pse_first,
                                   row_max + row * lanes, row_sum + row * lanes, lanes, lane0,
                                   masked ? masked + row * cols : NULL, fill + row * lanes,
                                   keep ? keep + row * cols : NULL, dsum[row], dropped + row * ld, grad + row * ld,
                                   cols, rounding);
        }
    }
    aclemu_matmul_panels_t(acc_v + c0 * dv, dv, dropped, ld, cols, rows, dy_rows, panel_stride[4], 0, dv, scratch, 1);
    aclemu_matmul_panels(dq, d, grad, ld, rows, cols, k + c0 * PANEL, panel_stride[1], 0, d, scratch, 1);
    aclemu_matmul_panels_t(acc_k + c0 * d, d, grad, ld, cols, rows, q_rows, panel_stride[3], 0, d, scratch, 1);
}
