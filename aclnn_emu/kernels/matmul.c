/* The attention kernels' fp32 matmuls: C = A B with B packed once into 32-column panels.
 *
 * Every element of C is summed the same way at every ISA level: chains of fused multiply-adds over CHUNK k steps each, starting from 0, whose
 * results are added in k order. The AVX-512 and AVX2 kernels differ only in how many of those sums
 * run side by side, and the baseline runs them with fmaf. So the products are bit-identical on every
 * machine and ISA level, which a BLAS (whose blocking and kernels follow the CPU) does not promise,
 * and they do not depend on how many rows a call takes.
 *
 * B is packed once per operand (a head's keys or values) and read by every block of rows, where a
 * BLAS call packs both operands again each time: the score and P.V blocks of attention are small
 * enough that this packing, and zeroing C before adding to it, cost a BLAS a fifth of its time.
 */

#include "native.h"

/* Element i of b, an array of fp16 (kind 0), bf16 (kind 1) or fp32 (kind 2) values, as fp32. */
INLINE float element(const void *b, int64_t i, int kind) {
    if (kind == 0) return fp16_value(((const uint16_t *)b)[i]);
    if (kind == 1) return float_of((uint32_t)((const uint16_t *)b)[i] << 16);
    return ((const float *)b)[i];
}

/* out = the k x n matrix b[kk * k_stride + j * n_stride] (of `kind`, as in element) as panels of
   PANEL columns: panel p holds columns [32p, 32p + 32) as k rows of 32 floats, the columns past n
   zero. Packing fp16 or bf16 straight away spares the kernels a widened copy of every K and V. */
INLINE void pack_kind(float *out, const void *b, int64_t k, int64_t n, int64_t k_stride, int64_t n_stride, int kind) {
    for (int64_t j0 = 0; j0 < n; j0 += PANEL, out += k * PANEL) {
        int64_t width = n - j0 < PANEL ? n - j0 : PANEL;
        if (k_stride == 1) {                  /* a transposed view (Kᵀ): read its columns in order */
            for (int64_t j = 0; j < width; ++j) {
                int64_t column = (j0 + j) * n_stride;
                for (int64_t kk = 0; kk < k; ++kk) out[kk * PANEL + j] = element(b, column + kk, kind);
            }
            for (int64_t kk = 0; kk < k; ++kk)
                for (int64_t j = width; j < PANEL; ++j) out[kk * PANEL + j] = 0.0f;
            continue;
        }
        for (int64_t kk = 0; kk < k; ++kk) {
            int64_t row = kk * k_stride + j0 * n_stride;
            for (int64_t j = 0; j < width; ++j) out[kk * PANEL + j] = element(b, row + j * n_stride, kind);
            for (int64_t j = width; j < PANEL; ++j) out[kk * PANEL + j] = 0.0f;
        }
    }
}

INLINE void pack_panels(float *out, const void *b, int64_t k, int64_t n, int64_t k_stride, int64_t n_stride, int kind) {
    if (kind == 0) pack_kind(out, b, k, n, k_stride, n_stride, 0);
    else if (kind == 1) pack_kind(out, b, k, n, k_stride, n_stride, 1);
    else pack_kind(out, b, k, n, k_stride, n_stride, 2);
}
DISPATCHED(pack_panels, (float *out, const void *b, int64_t k, int64_t n, int64_t k_stride, int64_t n_stride, int kind),
           (out, b, k, n, k_stride, n_stride, kind))

/* The k steps run in chunks of CHUNK: each chunk's chain starts from 0 and is then added to the
   running total. One chain over all of k rounds a long dot product (k of 192 and more) worse than a
   blocked BLAS does, enough to move fp16 outputs near a rounding midpoint past CANN's bound; chunks
   of 32 keep the error at a BLAS's for one extra add per 32 fused multiply-adds. */
#define CHUNK 32

/* One tile: MR rows of A (lda apart) . panel into the MR x 32 block at dst, rows ld apart. */
#define TILE_PARAMS (const float *a, int64_t lda, const float *panel, int64_t k, float *dst, int64_t ld)

#ifdef ISA_LEVELS
#define MR_SIMD 6
#define MR_PAIR 2

/* A tile of MR rows x 32 columns in passes of NV vectors of V floats, each with MR x NV accumulators
   for a chunk and as many running totals. The main tiles have 6 rows x 2 vectors (AVX-512: one
   pass of 2 x 16; AVX2: two of 2 x 8): 12 accumulators and 12 totals, in registers at AVX-512; AVX2
   has 16 and the compiler keeps the totals on the stack (added up in dst instead, whose rows lie
   far apart, the P V products ran 2-4 % slower). At AVX2, 3 rows x 32 in one pass needs one load of
   B fewer per row but runs 15 % slower. The pair tiles (2 rows x 32 in one pass) take the rows left
   over past a multiple of 6, which a main tile would take padded to 6 (2 % of the time of a block
   of 512 rows). */
#define TILE(name, target, MR, NV, vec, V, zero, load, broadcast, fmadd, add, store)                   \
    target static void name TILE_PARAMS {                                                             \
        for (int h = 0; h < PANEL; h += NV * V) {                                                     \
            vec total[MR][NV];                                                                        \
            for (int64_t k0 = 0; k0 < k; k0 += CHUNK) {                                               \
                int64_t k1 = k - k0 < CHUNK ? k : k0 + CHUNK;                                         \
                vec acc[MR][NV];                                                                      \
                _Pragma("GCC unroll 6")                                                               \
                for (int r = 0; r < MR; ++r)                                                          \
                    _Pragma("GCC unroll 4")                                                           \
                    for (int q = 0; q < NV; ++q) acc[r][q] = zero();                                  \
                for (int64_t kk = k0; kk < k1; ++kk) {                                                \
                    vec b[NV];                                                                        \
                    _Pragma("GCC unroll 4")                                                           \
                    for (int q = 0; q < NV; ++q) b[q] = load(panel + kk * PANEL + h + V * q);         \
                    _Pragma("GCC unroll 6")                                                           \
                    for (int r = 0; r < MR; ++r) {                                                    \
                        vec x = broadcast(a[r * lda + kk]);                                           \
                        _Pragma("GCC unroll 4")                                                       \
                        for (int q = 0; q < NV; ++q) acc[r][q] = fmadd(x, b[q], acc[r][q]);           \
                    }                                                                                 \
                }                                                                                     \
                _Pragma("GCC unroll 6")                                                               \
                for (int r = 0; r < MR; ++r)                                                          \
                    _Pragma("GCC unroll 4")                                                           \
                    for (int q = 0; q < NV; ++q) total[r][q] = k0 ? add(total[r][q], acc[r][q]) : acc[r][q]; \
            }                                                                                         \
            _Pragma("GCC unroll 6")                                                                   \
            for (int r = 0; r < MR; ++r)                                                              \
                _Pragma("GCC unroll 4")                                                               \
                for (int q = 0; q < NV; ++q) store(dst + r * ld + h + V * q, total[r][q]);            \
        }                                                                                             \
    }

/* (a second expansion, so the operation lists below count as arguments) */
#define DEFINE_TILE(name, target, MR, NV, ...) TILE(name, target, MR, NV, __VA_ARGS__)
#define AVX512_OPS __m512, 16, _mm512_setzero_ps, _mm512_loadu_ps, _mm512_set1_ps, _mm512_fmadd_ps, \
    _mm512_add_ps, _mm512_storeu_ps
#define AVX2_OPS __m256, 8, _mm256_setzero_ps, _mm256_loadu_ps, _mm256_set1_ps, _mm256_fmadd_ps, \
    _mm256_add_ps, _mm256_storeu_ps
DEFINE_TILE(tile_avx512, ON_AVX512, MR_SIMD, 2, AVX512_OPS)
DEFINE_TILE(pair_avx512, ON_AVX512, MR_PAIR, 2, AVX512_OPS)
DEFINE_TILE(tile_avx2, ON_AVX2, MR_SIMD, 2, AVX2_OPS)
DEFINE_TILE(pair_avx2, ON_AVX2, MR_PAIR, 4, AVX2_OPS)
#endif

#define MR_BASELINE 2

static void tile_baseline TILE_PARAMS {
    for (int r = 0; r < MR_BASELINE; ++r)
        for (int64_t k0 = 0; k0 < k; k0 += CHUNK) {
            int64_t k1 = k - k0 < CHUNK ? k : k0 + CHUNK;
            float acc[PANEL] = {0};
            for (int64_t kk = k0; kk < k1; ++kk)
                for (int j = 0; j < PANEL; ++j) acc[j] = fmaf(a[r * lda + kk], panel[kk * PANEL + j], acc[j]);
            for (int j = 0; j < PANEL; ++j) dst[r * ld + j] = k0 ? dst[r * ld + j] + acc[j] : acc[j];
        }
}

#define MR_MAX 6

/* Floats of the scratch aclemu_matmul_panels needs for a k of k. */
int64_t aclemu_matmul_scratch(int64_t k) { return MR_MAX * k; }

/* c[i * ldc + j] = sum over kk < k of a[i * lda + kk] * B[kk][col0 + j], for i < m and j < cols,
   where B[kk][col] = panels[(col / 32) * panel_stride + kk * 32 + col % 32]. `scratch` holds
   MR_MAX * k floats: the last rows of A when they fill neither a tile nor pair tiles. */
void aclemu_matmul_panels(float *c, int64_t ldc, const float *a, int64_t lda, int64_t m, int64_t k,
                          const float *panels, int64_t panel_stride, int64_t col0, int64_t cols, float *scratch) {
    void (*tile_fn) TILE_PARAMS = tile_baseline, (*pair_fn) TILE_PARAMS = 0;
    int mr = MR_BASELINE;
#ifdef ISA_LEVELS
    if (aclemu_isa_in_use == ISA_AVX512) tile_fn = tile_avx512, pair_fn = pair_avx512, mr = MR_SIMD;
    else if (aclemu_isa_in_use == ISA_AVX2) tile_fn = tile_avx2, pair_fn = pair_avx2, mr = MR_SIMD;
#endif
    if (k == 0) {                                        /* empty sums: the tiles would store nothing */
        for (int64_t i = 0; i < m; ++i) memset(c + i * ldc, 0, (size_t)cols * sizeof(float));
        return;
    }
    float tile[MR_MAX * PANEL];
    int64_t full = m / mr, p0 = col0 / PANEL, panels_used = (col0 + cols + PANEL - 1) / PANEL - p0;
    int rest = (int)(m - full * mr);
    /* the rest in pair tiles where that takes fewer rows than one padded tile, else one tile of
       the rest's rows, then copies of its last, in scratch */
    int64_t pairs = pair_fn && rest <= mr - MR_PAIR ? (rest + MR_PAIR - 1) / MR_PAIR : 0;
    int64_t blocks = full + (pairs ? pairs : rest > 0);
    if (rest && !pairs)
        for (int r = 0; r < mr; ++r)
            memcpy(scratch + r * k, a + (full * mr + (r < rest ? r : rest - 1)) * lda, (size_t)k * sizeof(float));
    /* A panel that fills at most half of L1 (128 steps, 16 KiB, of a 32 KiB L1) stays there while
       every block of rows passes it; a longer one streams from L2, then each block of rows stays
       while the panels pass. */
    int panel_outer = k * PANEL * (int64_t)sizeof(float) <= aclemu_l1_bytes / 2;
    for (int64_t outer = 0; outer < (panel_outer ? panels_used : blocks); ++outer)
        for (int64_t inner = 0; inner < (panel_outer ? blocks : panels_used); ++inner) {
            int64_t block = panel_outer ? inner : outer, p = p0 + (panel_outer ? outer : inner);
            void (*fn) TILE_PARAMS = tile_fn;
            int64_t i0 = block * mr, ld_rows = lda;
            int count = mr, height = mr;                         /* rows wanted, rows the tile computes */
            if (block >= full && pairs) {                        /* a pair tile; a single row read twice */
                fn = pair_fn, height = MR_PAIR, i0 = full * mr + (block - full) * MR_PAIR;
                count = m - i0 < MR_PAIR ? (int)(m - i0) : MR_PAIR;
                ld_rows = count == MR_PAIR ? lda : 0;
            } else if (block >= full) {
                count = rest, ld_rows = k;
            }
            const float *rows = block >= full && !pairs ? scratch : a + i0 * lda;
            int64_t lo = col0 > p * PANEL ? col0 - p * PANEL : 0;
            int64_t hi = col0 + cols < (p + 1) * PANEL ? col0 + cols - p * PANEL : PANEL;
            float *out = c + i0 * ldc + p * PANEL - col0;       /* column p * 32 of row i0 */
            if (lo == 0 && hi == PANEL && count == height) {
                fn(rows, ld_rows, panels + p * panel_stride, k, out, ldc);
            } else {                                             /* through the tile buffer */
                fn(rows, ld_rows, panels + p * panel_stride, k, tile, PANEL);
                for (int r = 0; r < count; ++r) memcpy(out + r * ldc + lo, tile + r * PANEL + lo, (size_t)(hi - lo) * sizeof(float));
            }
        }
}
