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

/* One tile: MR rows of A . panel into the MR x 32 block at dst, rows ld apart, or with `accumulate`
   added to it (dst + sum, where a pass through a tile buffer cost the backward's products 5 %). A's
   element (r, kk) is a[r * lda + kk] (ROW_MAJOR), or a[kk * STRIP + r] (STRIP_MAJOR: a transposed
   A's strip of rows, aclemu_matmul_panels_t; lda unused). */
#define TILE_PARAMS (const float *a, int64_t lda, const float *panel, int64_t k, float *dst, int64_t ld, int accumulate)
#define STRIP 8
#define ROW_MAJOR(r, kk) ((r) * lda + (kk))
#define STRIP_MAJOR(r, kk) ((kk) * STRIP + (r))

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
#define TILE(name, target, AT, MR, NV, vec, V, zero, load, broadcast, fmadd, add, store)                   \
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
                        vec x = broadcast(a[AT(r, kk)]);                                              \
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
                for (int q = 0; q < NV; ++q) {                                                        \
                    float *to = dst + r * ld + h + V * q;                                             \
                    store(to, accumulate ? add(load(to), total[r][q]) : total[r][q]);                 \
                }                                                                                     \
        }                                                                                             \
    }

/* (a second expansion, so the operation lists below count as arguments) */
#define DEFINE_TILE(name, target, AT, MR, NV, ...) TILE(name, target, AT, MR, NV, __VA_ARGS__)
#define AVX512_OPS __m512, 16, _mm512_setzero_ps, _mm512_loadu_ps, _mm512_set1_ps, _mm512_fmadd_ps, \
    _mm512_add_ps, _mm512_storeu_ps
#define AVX2_OPS __m256, 8, _mm256_setzero_ps, _mm256_loadu_ps, _mm256_set1_ps, _mm256_fmadd_ps, \
    _mm256_add_ps, _mm256_storeu_ps
/* GCC cannot see that total[][] is set by the first chunk (the callers take k == 0 apart) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
DEFINE_TILE(tile_avx512, ON_AVX512, ROW_MAJOR, MR_SIMD, 2, AVX512_OPS)
DEFINE_TILE(pair_avx512, ON_AVX512, ROW_MAJOR, MR_PAIR, 2, AVX512_OPS)
DEFINE_TILE(tile_avx2, ON_AVX2, ROW_MAJOR, MR_SIMD, 2, AVX2_OPS)
DEFINE_TILE(pair_avx2, ON_AVX2, ROW_MAJOR, MR_PAIR, 4, AVX2_OPS)
DEFINE_TILE(strip_avx512, ON_AVX512, STRIP_MAJOR, MR_SIMD, 2, AVX512_OPS)
DEFINE_TILE(strip_avx2, ON_AVX2, STRIP_MAJOR, MR_SIMD, 2, AVX2_OPS)
#pragma GCC diagnostic pop
#endif

#define MR_BASELINE 2

#define BASELINE_TILE(name, AT)                                                                       \
    static void name TILE_PARAMS {                                                                    \
        for (int r = 0; r < MR_BASELINE; ++r) {                                                       \
            float total[PANEL];                                                                       \
            for (int64_t k0 = 0; k0 < k; k0 += CHUNK) {                                               \
                int64_t k1 = k - k0 < CHUNK ? k : k0 + CHUNK;                                         \
                float acc[PANEL] = {0};                                                               \
                for (int64_t kk = k0; kk < k1; ++kk)                                                  \
                    for (int j = 0; j < PANEL; ++j) acc[j] = fmaf(a[AT(r, kk)], panel[kk * PANEL + j], acc[j]); \
                for (int j = 0; j < PANEL; ++j) total[j] = k0 ? total[j] + acc[j] : acc[j];           \
            }                                                                                         \
            for (int j = 0; j < PANEL; ++j) dst[r * ld + j] = accumulate ? dst[r * ld + j] + total[j] : total[j]; \
        }                                                                                             \
    }
BASELINE_TILE(tile_baseline, ROW_MAJOR)
BASELINE_TILE(strip_baseline, STRIP_MAJOR)

#define MR_MAX 6

/* Floats of the scratch aclemu_matmul_panels and aclemu_matmul_panels_t need for a k of k: one
   tile's rows of A, or a transposed A's strips (STRIP_TILES, below). */
int64_t aclemu_matmul_scratch(int64_t k) { return 8 * STRIP * k; }

typedef void (*tile_kernel) TILE_PARAMS;

/* The tiles at the ISA level in use and their rows: 6 (baseline: 2); the pair tiles (none at the
   baseline) and the strip tiles of a transposed A. */
static int tiles(tile_kernel *tile, tile_kernel *pair, tile_kernel *strip) {
    *tile = tile_baseline, *pair = 0, *strip = strip_baseline;
#ifdef ISA_LEVELS
    if (aclemu_isa_in_use == ISA_AVX512) {
        *tile = tile_avx512, *pair = pair_avx512, *strip = strip_avx512;
        return MR_SIMD;
    }
    if (aclemu_isa_in_use == ISA_AVX2) {
        *tile = tile_avx2, *pair = pair_avx2, *strip = strip_avx2;
        return MR_SIMD;
    }
#endif
    return MR_BASELINE;
}

/* What every tile of one product shares: C, the window of its columns, B's panels, k, and
   whether the product is added to C (as a whole: C + sum) or stored. */
struct grid {
    float *c;
    int64_t ldc, k, panel_stride, col0, cols;
    const float *panels;
    int accumulate;
};

/* The tile of C's rows from i0 (`count` of the `height` that `fn` computes from A's `rows`, read
   with lda as fn reads them) and panel p, clipped to the column window. */
INLINE void tile_at(const struct grid *g, tile_kernel fn, const float *rows, int64_t lda, int64_t i0, int count,
                    int height, int64_t p, float *tile) {
    int64_t lo = g->col0 > p * PANEL ? g->col0 - p * PANEL : 0;
    int64_t hi = g->col0 + g->cols < (p + 1) * PANEL ? g->col0 + g->cols - p * PANEL : PANEL;
    float *out = g->c + i0 * g->ldc + p * PANEL - g->col0;       /* column p * 32 of row i0 */
    if (lo == 0 && hi == PANEL && count == height) {
        fn(rows, lda, g->panels + p * g->panel_stride, g->k, out, g->ldc, g->accumulate);
    } else {                                                     /* through the tile buffer */
        fn(rows, lda, g->panels + p * g->panel_stride, g->k, tile, PANEL, 0);
        for (int r = 0; r < count; ++r)
            if (g->accumulate)
                for (int64_t j = lo; j < hi; ++j) out[r * g->ldc + j] += tile[r * PANEL + j];
            else
                memcpy(out + r * g->ldc + lo, tile + r * PANEL + lo, (size_t)(hi - lo) * sizeof(float));
    }
}

/* c[i * ldc + j] = sum over kk < k of a[i * lda + kk] * B[kk][col0 + j], for i < m and j < cols,
   where B[kk][col] = panels[(col / 32) * panel_stride + kk * 32 + col % 32]; with `accumulate`,
   c[i * ldc + j] plus that sum. `scratch` holds aclemu_matmul_scratch(k) floats: the last rows of A
   when they fill neither a tile nor pair tiles. */
void aclemu_matmul_panels(float *c, int64_t ldc, const float *a, int64_t lda, int64_t m, int64_t k,
                          const float *panels, int64_t panel_stride, int64_t col0, int64_t cols, float *scratch,
                          int accumulate) {
    tile_kernel tile_fn, pair_fn, strip_fn;
    int mr = tiles(&tile_fn, &pair_fn, &strip_fn);
    if (k == 0) {                                        /* empty sums: the tiles would store nothing */
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < cols; ++j) c[i * ldc + j] = accumulate ? c[i * ldc + j] + 0.0f : 0.0f;
        return;
    }
    struct grid g = {c, ldc, k, panel_stride, col0, cols, panels, accumulate};
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
            if (block < full) {
                tile_at(&g, tile_fn, a + block * mr * lda, lda, block * mr, mr, mr, p, tile);
            } else if (pairs) {                                  /* a pair tile; a single row read twice */
                int64_t i0 = full * mr + (block - full) * MR_PAIR;
                int count = m - i0 < MR_PAIR ? (int)(m - i0) : MR_PAIR;
                tile_at(&g, pair_fn, a + i0 * lda, count == MR_PAIR ? lda : 0, i0, count, MR_PAIR, p, tile);
            } else {
                tile_at(&g, tile_fn, scratch, k, full * mr, rest, mr, p, tile);
            }
        }
}

/* aclemu_matmul_panels for A(i, kk) = a[kk * lda + i], a transposed view (the backward's Pᵀ and
   dSᵀ). The rows of STRIP_TILES tiles at a time are first copied into strips in scratch, STRIP
   floats per k step and tile, which the tile then reads in order while the panels pass. Read in
   place, a tile would take one cache line per k step, lda apart, on every pass; for a power-of-two
   lda those lines share a few L1 sets and come from L2 each time. The copy reads each line once.
   Rows past m are copies of the last row. The same sums in the same order, so the same bits as
   for a row-major copy of A. */
#define STRIP_TILES 8
void aclemu_matmul_panels_t(float *c, int64_t ldc, const float *a, int64_t lda, int64_t m, int64_t k,
                            const float *panels, int64_t panel_stride, int64_t col0, int64_t cols, float *scratch,
                            int accumulate) {
    tile_kernel tile_fn, pair_fn, strip_fn;
    int mr = tiles(&tile_fn, &pair_fn, &strip_fn);
    if (k == 0) {
        aclemu_matmul_panels(c, ldc, a, lda, m, k, panels, panel_stride, col0, cols, scratch, accumulate);
        return;
    }
    struct grid g = {c, ldc, k, panel_stride, col0, cols, panels, accumulate};
    float tile[MR_MAX * PANEL];
    int64_t p0 = col0 / PANEL, p1 = (col0 + cols + PANEL - 1) / PANEL;
    for (int64_t g0 = 0; g0 < m; g0 += STRIP_TILES * mr) {
        int64_t strips = (m - g0 + mr - 1) / mr < STRIP_TILES ? (m - g0 + mr - 1) / mr : STRIP_TILES;
        for (int64_t t = 0; t < strips; ++t)
            for (int64_t kk = 0; kk < k; ++kk) {
                float *strip = scratch + (t * k + kk) * STRIP;
                const float *row = a + kk * lda;
                int64_t i0 = g0 + t * mr;
                if (i0 + STRIP <= m) memcpy(strip, row + i0, STRIP * sizeof(float));
                else for (int r = 0; r < mr; ++r) strip[r] = row[i0 + r < m ? i0 + r : m - 1];
            }
        for (int64_t t = 0; t < strips; ++t) {
            int64_t i0 = g0 + t * mr;
            int count = m - i0 < mr ? (int)(m - i0) : mr;
            for (int64_t p = p0; p < p1; ++p) tile_at(&g, strip_fn, scratch + t * k * STRIP, 0, i0, count, mr, p, tile);
        }
    }
}
