/* The interface of aclnn_emu.kernels._native: the constants Python shares with the C loops and the
 * functions it calls. aclnn_emu/shim/native.py hands this file to cffi as its declarations, so
 * Python reads each constant from here (lib.PANEL, lib.FP16_EVEN, ...) and never restates it; the C
 * sources include it through native.h. cffi parses it as plain declarations: no preprocessor lines
 * but #define of integer constants. */

/* Columns per panel of a packed right-hand operand of aclemu_matmul_panels. */
#define PANEL 32
/* Floats of padding after each row of a score block: rows 4 KiB apart would share L1 sets in P V. */
#define ROW_PAD 16

/* The instruction-set levels the vector loops are compiled for (x86-64). */
enum isa { ISA_BASELINE = 0, ISA_AVX2 = 1, ISA_AVX512 = 2 };

/* How a kernel narrows an fp32 result onto a lower precision's grid (kept in fp32): to nearest
   even (a real conversion, CAST_RINT) or ties away from zero (CAST_ROUND). */
enum rounding { KEEP_FP32 = 0, FP16_EVEN = 1, BF16_AWAY = 2, FP16_AWAY = 3, BF16_EVEN = 4 };

int aclemu_best_isa(void);
int aclemu_select_isa(int level);
void aclemu_set_cache_sizes(int64_t l1, int64_t l2);
void aclemu_scale_scores(float *x, int64_t rows, int64_t cols, int64_t ld, float pre, int fp16, float post);
void aclemu_softmax_block(float *s, int64_t rows, int64_t cols, int64_t ld, float pre, int fp16, float post,
                          float *row_max, float *row_sum, float *alpha, int rounding);
void aclemu_rescale_add(float *acc, const float *alpha, const float *add, int64_t rows, int64_t cols);
void aclemu_store_rows(void *dst, int64_t dst_stride, const float *src, const float *divisor, int64_t rows,
                       int64_t cols, int rounding);
void aclemu_grad_scores_row(float *x, const float *pse, float scale, int pse_first, const float *row_max,
                            const float *row_sum, int64_t lanes, int64_t lane0, const uint8_t *masked,
                            const float *fill, const float *keep, float dsum, float *dropped, float *grad,
                            int64_t cols, int rounding);
void aclemu_softmax_probs(float *s, int64_t rows, int64_t cols, const float *row_max, const float *row_sum,
                          int64_t lanes, int64_t lane0);
void aclemu_round_product(float *dst, const float *a, const float *b, int64_t n, int rounding);
void aclemu_softmax_grad(float *grad, const float *probs, const float *keep, const float *dsum,
                         int64_t rows, int64_t cols, int rounding);
void aclemu_copy_pieces(char *dst, const char *src, const int64_t *dst_offset, const int64_t *src_offset,
                        int64_t pairs, int64_t pieces, int64_t piece_bytes, int64_t dst_stride,
                        int64_t src_stride);
void aclemu_widen(float *dst, const uint16_t *src, int64_t rows, int64_t cols, int64_t src_row_stride,
                  int64_t dst_row_stride, int kind);
void aclemu_scatter_add_rows(float *acc, int64_t acc_stride, const int64_t *pos, const float *vals, int64_t n,
                             int64_t cols);
void aclemu_narrow_fp16(uint16_t *dst, const float *src, int64_t n);
void aclemu_decode_scores(float *scores, const float *q, int64_t heads, int64_t groups, const void *base,
                          const int64_t *offsets, int64_t head_stride, int64_t rows, int64_t d, int kind,
                          const float *scale, const float *shift);
void aclemu_decode_values(float *acc, const float *p, int64_t heads, int64_t groups, const void *base,
                          const int64_t *offsets, int64_t head_stride, int64_t rows, int64_t d, int kind,
                          const float *scale, const float *shift);
void aclemu_pack_panels(float *out, const void *b, int64_t k, int64_t n, int64_t k_stride, int64_t n_stride,
                        int kind);
int64_t aclemu_matmul_scratch(int64_t k);
void aclemu_matmul_panels(float *c, int64_t ldc, const float *a, int64_t lda, int64_t m, int64_t k,
                          const float *panels, int64_t panel_stride, int64_t col0, int64_t cols, float *scratch,
                          int accumulate);
void aclemu_matmul_panels_t(float *c, int64_t ldc, const float *a, int64_t lda, int64_t m, int64_t k,
                            const float *panels, int64_t panel_stride, int64_t col0, int64_t cols, float *scratch,
                            int accumulate);
int64_t aclemu_attention_work(int64_t d, int64_t dv, int64_t max_cols);
void aclemu_attention_blocks(const float *q, int64_t ldq, int64_t rows, int64_t d,
                             const float *keys, int64_t key_stride, const float *values, int64_t value_stride,
                             int64_t dv, const int64_t *bounds, int64_t blocks, float pre, int fp16, float post,
                             int rounding, int zero_unseen, float *row_max, float *row_sum, float *acc,
                             int acc_set, float *work);
int64_t aclemu_attention_grad_work(int64_t rows, int64_t cols, int64_t d, int64_t dv);
void aclemu_attention_grad_block(const float *q, const float *dy, int64_t rows, int64_t d, int64_t dv,
                                 const float *kt, const float *k, const float *vt, const float *q_rows,
                                 const float *dy_rows, const int64_t *panel_stride, int64_t c0, int64_t cols,
                                 const float *row_max, const float *row_sum, int64_t lanes, const float *dsum,
                                 float scale, const float *pse, int pse_first, const uint8_t *masked,
                                 const float *fill, const float *keep, int rounding, float *dq, float *acc_k,
                                 float *acc_v, float *work);
