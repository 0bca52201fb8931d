/* The forward attentions' online softmax over a run of key blocks, in one call.
 *
 * It strings together the steps of native.c and matmul.c. Per key block and row:
 * S = Q Kᵀ (matmul_panels), scaled and turned into P with the running max and sum (softmax_block),
 * then O = O * alpha + P V (matmul_panels, rescale_add). Driven from Python, those four calls per
 * block cost the call overheads and, with a worker thread per core, a wait for the GIL after each;
 * and a block of 512 x 512 scores (1 MiB) went through the caches once per step. Here the rows go
 * through in chunks (chunk_rows, from the L2 size), whose scores stay in L1 and L2 between the steps.
 *
 * Each row gets the same operations in the same order as from the step-by-step calls, and the
 * matmul's sums do not depend on how many rows it takes, so the results are bit-identical.
 */
#include <float.h>

#include "native.h"

/* Rows per chunk: a chunk's scores, P V and alphas fill at most a quarter of L2 (96 rows of 512
   keys and dv 128 in 1 MiB), in whole tiles of six rows, from one tile to 32. */
static int64_t chunk_rows(int64_t dv, int64_t max_cols) {
    int64_t rows = aclemu_l2_bytes / 4 / ((max_cols + ROW_PAD + dv + 1) * (int64_t)sizeof(float)) / 6 * 6;
    return rows < 6 ? 6 : (rows > 192 ? 192 : rows);
}

/* Floats of `work` that aclemu_attention_blocks needs for head dims d and dv and key blocks of up
   to max_cols keys: a chunk's scores, its P V and alphas, and the matmul's scratch rows. */
int64_t aclemu_attention_work(int64_t d, int64_t dv, int64_t max_cols) {
    return chunk_rows(dv, max_cols) * (max_cols + ROW_PAD + dv + 1) + aclemu_matmul_scratch(d > max_cols ? d : max_cols);
}

/* For rows [0, rows) of q ([rows, d], ldq apart) and the key blocks [bounds[b], bounds[b + 1]) for
   b < blocks (key indices into the packed Kᵀ `keys`, d x keys, and V `values`, keys x dv), in key
   order per row:
     S = Q Kᵀ over the block's keys, prepared and exponentiated as by aclemu_softmax_block with
         pre, fp16, post and rounding, which also updates row_max and row_sum;
     with zero_unseen, a row whose max is still -FLT_MAX gets P = 0 (every score so far masked);
     acc = acc * alpha + P V ([rows, dv], contiguous), or P V for the first block if !acc_set.
   `work` holds aclemu_attention_work(d, dv, widest block) floats. */
void aclemu_attention_blocks(const float *q, int64_t ldq, int64_t rows, int64_t d,
                             const float *keys, int64_t key_stride, const float *values, int64_t value_stride,
                             int64_t dv, const int64_t *bounds, int64_t blocks, float pre, int fp16, float post,
                             int rounding, int zero_unseen, float *row_max, float *row_sum, float *acc,
                             int acc_set, float *work) {
    int64_t widest = 0;
    for (int64_t b = 0; b < blocks; ++b)
        widest = bounds[b + 1] - bounds[b] > widest ? bounds[b + 1] - bounds[b] : widest;
    int64_t ld = widest + ROW_PAD, chunk = chunk_rows(dv, widest);
    float *scores = work, *pv = scores + chunk * ld, *alpha = pv + chunk * dv;
    float *scratch = alpha + chunk;
    for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
        int64_t count = rows - r0 < chunk ? rows - r0 : chunk;
        float *o = acc + r0 * dv;
        for (int64_t b = 0; b < blocks; ++b) {
            int64_t c0 = bounds[b], cols = bounds[b + 1] - c0;
            aclemu_matmul_panels(scores, ld, q + r0 * ldq, ldq, count, d, keys, key_stride, c0, cols, scratch, 0);
            aclemu_softmax_block(scores, count, cols, ld, pre, fp16, post, row_max + r0, row_sum + r0, alpha,
                                 rounding);
            if (zero_unseen)
                for (int64_t i = 0; i < count; ++i)
                    if (row_max[r0 + i] == -FLT_MAX) memset(scores + i * ld, 0, (size_t)cols * sizeof(float));
            int fresh = !acc_set && b == 0;
            aclemu_matmul_panels(fresh ? o : pv, dv, scores, ld, count, cols, values + c0 * PANEL, value_stride,
                                 0, dv, scratch, 0);
            if (!fresh) aclemu_rescale_add(o, alpha, pv, count, dv);
        }
    }
}
