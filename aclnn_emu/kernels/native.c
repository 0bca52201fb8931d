/* Compiled inner loops of the kernels, for the steps numpy cannot do in one pass.
 *
 * numpy runs one pass over memory per operation and has no SIMD fp32 -> fp16 conversion, so the
 * attention kernels' "round S to fp16, scale, row max, exp, row sum, round P, dS" cost about ten
 * passes over every score block, and a paged-cache scatter or gather of 32-byte pieces goes through
 * numpy's generic strided copies. Here each step is one loop over a row that stays in L1, and each run of
 * consecutive cache slots one tight copy loop.
 *
 * The arithmetic is plain IEEE single precision, built with -ffp-contract=off so no multiply-add
 * is fused but the explicit fmaf calls: every version below (x86: AVX-512, AVX2, baseline) rounds,
 * converts and exponentiates bit-identically, and the fp16 rounding is bit-exact with a real
 * conversion. Sums over a row add their terms in one order at every vector width (SUM_LANES).
 */
#include "native.h"

int aclemu_isa_in_use = ISA_BASELINE;
int64_t aclemu_l1_bytes = 32 << 10, aclemu_l2_bytes = 1 << 20;

/* The cache sizes to block for from now on (kernels/native.py: the CPU's, or ACLNN_EMU_CACHE_SIZES). */
void aclemu_set_cache_sizes(int64_t l1, int64_t l2) {
    aclemu_l1_bytes = l1 > 4096 ? l1 : 4096;
    aclemu_l2_bytes = l2 > 65536 ? l2 : 65536;
}

/* The best level this CPU runs. */
int aclemu_best_isa(void) {
#ifdef ISA_LEVELS
    __builtin_cpu_init();
    if (__builtin_cpu_supports("x86-64-v4")) return ISA_AVX512;
    if (__builtin_cpu_supports("x86-64-v3")) return ISA_AVX2;
#endif
    return ISA_BASELINE;
}

/* Runs `level` from now on, or the best the CPU has if that is lower; returns the level in use. */
int aclemu_select_isa(int level) {
    int best = aclemu_best_isa();
    aclemu_isa_in_use = level < best ? (level < ISA_BASELINE ? ISA_BASELINE : level) : best;
    return aclemu_isa_in_use;
}

/* The nearest fp16 value to x, ties to even, as an fp32, for 0 <= x < 65520 (NaN stays NaN). For
   x in [2^e, 2^(e+1)) adding sigma = 1.5 * 2^(e+13) lands where the fp32 spacing is 2^(e-10), the
   fp16 spacing of x, so the addition rounds (to even: sigma is an even multiple of that spacing)
   and the subtraction is exact. e is clamped at -14 so subnormals use the fixed 2^-24 grid. */
INLINE float round_fp16_nonnegative(float x) {
    uint32_t exponent = bits_of(x) & 0x7F800000u;
    exponent = exponent < 0x38800000u ? 0x38800000u : exponent;          /* 2^-14 */
    float sigma = float_of((exponent + (13u << 23)) | 0x00400000u);
    return (x + sigma) - sigma;
}

/* round_fp16_nonnegative for any x, as a real conversion does it: the sign is kept (also on a
   result of 0) and from 65520 on the result is infinite. */
INLINE float round_fp16(float x) {
    float rounded = copysignf(round_fp16_nonnegative(fabsf(x)), x);
    return fabsf(x) >= 65520.0f ? copysignf(INFINITY, x) : rounded;
}

/* Round to bf16 with ties away from zero (CAST_ROUND): adding half of the dropped bits to the
   magnitude and truncating; a carry into the exponent is the right rounding up, also to infinity.
   NaN stays NaN (round_bf16_half_away_number: x is not NaN). */
INLINE float round_bf16_half_away_number(float x) {
    return float_of((bits_of(x) + 0x8000u) & 0xFFFF0000u);
}

INLINE float round_bf16_half_away(float x) {
    return x != x ? x : round_bf16_half_away_number(x);
}

/* Round to bf16 with ties to even (CAST_RINT, a real conversion): adding 0x7FFF plus the kept
   lowest bit rounds up exactly past half and at half only to an even result. NaN stays NaN. */
INLINE float round_bf16_even(float x) {
    uint32_t b = bits_of(x);
    return x != x ? x : float_of((b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u);
}

/* fp16's smallest normal value, 2^-14: below it the fp16 grid is the fixed 2^-24 of the subnormals. */
#define FP16_MIN_NORMAL 6.103515625e-05f

/* CAST_ROUND of a magnitude a >= 2^-14 (below 65520) to fp16: as for bf16, on the 10-bit mantissa. */
INLINE float round_fp16_half_away_normal(float a) {
    return float_of((bits_of(a) + 0x1000u) & 0xFFFFE000u);
}

/* round_fp16_nonnegative of a in [2^-14, 65504]: to nearest even on the 10-bit mantissa (adding
   0xFFF plus the kept lowest bit). */
INLINE float round_fp16_even_normal(float a) {
    uint32_t b = bits_of(a);
    return float_of((b + 0xFFFu + ((b >> 13) & 1u)) & 0xFFFFE000u);
}

/* CAST_ROUND of a magnitude a < 2^-14 onto fp16's subnormal grid of 2^-24. */
INLINE float round_fp16_half_away_subnormal(float a) {
    float steps = a * 16777216.0f;                   /* in units of 2^-24: exact below 2^-14 */
    steps = steps < 2048.0f ? steps : 2048.0f;       /* (bounded for the a it is not meant for) */
    float nearest = (steps + 8388608.0f) - 8388608.0f;                      /* ties to even */
    nearest += steps - nearest == 0.5f ? 1.0f : 0.0f;                       /* ties away */
    return nearest * 5.9604644775390625e-08f;
}

/* Round to fp16 with ties away from zero (CAST_ROUND): normal results on the 10-bit mantissa,
   below 2^-14 on the fixed 2^-24 grid, from 65520 on infinite. NaN stays NaN. */
INLINE float round_fp16_half_away(float x) {
    float a = fabsf(x);
    float normal = round_fp16_half_away_normal(a), subnormal = round_fp16_half_away_subnormal(a);
    float rounded = a < FP16_MIN_NORMAL ? subnormal : (a >= 65520.0f ? INFINITY : normal);
    return x != x ? x : copysignf(rounded, x);
}

INLINE float round_to(float x, int rounding) {
    switch (rounding) {
    case FP16_EVEN: return round_fp16(x);
    case BF16_AWAY: return round_bf16_half_away(x);
    case FP16_AWAY: return round_fp16_half_away(x);
    case BF16_EVEN: return round_bf16_even(x);
    default: return x;
    }
}

/* rint(y / ln2) for |y| < 2^22 (adding 1.5 * 2^23 rounds to an integer). */
INLINE float rint_log2e(float y) { return fmaf(y, 1.44269504088896341f, 12582912.0f) - 12582912.0f; }

/* r = y - n ln2 (two-part ln2, |r| <= ln2/2). */
INLINE float exp_argument(float y, float n) { return fmaf(n, 2.12194440e-4f, fmaf(n, -0.693359375f, y)); }

/* e^r by a degree-7 polynomial (coefficients of Cephes' expf). */
INLINE float exp_polynomial(float r) {
    float p = 1.9875691500e-4f;
    p = fmaf(p, r, 1.3981999507e-3f);
    p = fmaf(p, r, 8.3334519073e-3f);
    p = fmaf(p, r, 4.1665795894e-2f);
    p = fmaf(p, r, 1.6666665459e-1f);
    p = fmaf(p, r, 5.0000001201e-1f);
    return fmaf(p * r, r, r) + 1.0f;
}

/* e^r for r = y - n ln2. */
INLINE float exp_reduced(float y, float n) { return exp_polynomial(exp_argument(y, n)); }

/* e^y for any y but NaN, within 1 ulp: y = n ln2 + r with |r| <= ln2/2 (two-part ln2), e^r by a
   degree-7 polynomial (coefficients of Cephes' expf), 2^n applied in two halves so results in the
   subnormal range come out correctly rounded, e^-inf is 0 and e^inf is inf. fmaf is exactly
   rounded everywhere (one instruction where the CPU has FMA), so every version agrees bit for bit. */
INLINE float exp_finite(float y) {
    float clamped = y > -110.0f ? (y < 90.0f ? y : 90.0f) : -110.0f;    /* e^-110 rounds to 0, e^90 to inf */
    float n = rint_log2e(clamped);
    float p = exp_reduced(clamped, n);
    int32_t k = (int32_t)n;                                      /* in [-159, 130] */
    int32_t half = k >> 1;
    return p * float_of((uint32_t)(half + 127) << 23) * float_of((uint32_t)(k - half + 127) << 23);
}

/* exp_finite for y in [EXP_NORMAL_LOW, 0], where e^y is a normal number (n >= -124): nothing to
   clamp, and 2^n is applied by adding n to the exponent of p (in [0.7, 1.5]), which is exact here
   as the two multiplications are, so the result is the same. */
#define EXP_NORMAL_LOW -86.0f
INLINE float exp_normal_t(float y) { return fmaf(y, 1.44269504088896341f, 12582912.0f); }   /* rint_log2e before its subtraction */

/* 2^n e^r, for t = exp_normal_t(y) and r = exp_argument(y, n): t's bits are those of 1.5 * 2^23
   plus n, whose lowest 9 bits are 0, so shifted left by 23 they leave n << 23, without a
   float-to-integer conversion. */
INLINE float exp_normal_join(float t, float r) { return float_of(bits_of(exp_polynomial(r)) + (bits_of(t) << 23)); }

INLINE float exp_normal(float y) {
    float t = exp_normal_t(y);
    return exp_normal_join(t, exp_argument(y, t - 12582912.0f));
}

/* exp_normal in two passes over a row of n <= SPLIT_ROW: x[j] <- r, t[j] <- t of x[j] - shift,
   for exp_normal_join. Each pass's chain of dependent steps is half as long, so twice as many
   elements are in flight: the one-pass loop waits on its latency (AVX2: 12 % faster). */
#define SPLIT_ROW 1024
INLINE void exp_normal_split(float *x, float *t, int64_t n, float shift) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) {
        float y = x[j] - shift;
        t[j] = exp_normal_t(y);
        x[j] = exp_argument(y, t[j] - 12582912.0f);
    }
}

/* exp_normal for y from FP16_NORMAL_EXP_LOW on: e^y >= 7.4e-5, a normal fp16 number (>= 2^-14). */
#define FP16_NORMAL_EXP_LOW -9.5f

/* exp_finite that lets NaN through. */
INLINE float exp_any(float y) { return y != y ? y : exp_finite(y); }

/* The fp16 bit pattern of x, which lies on the fp16 grid (or is infinite or NaN). */
INLINE uint16_t fp16_bits(float x) {
    uint32_t magnitude = bits_of(x) & 0x7FFFFFFFu;
    float a = fabsf(x);
    uint32_t normal = (magnitude - (112u << 23)) >> 13;          /* rebias 127 -> 15, drop 13 bits */
    uint32_t subnormal = (uint32_t)(int32_t)(a < 6.103515625e-05f ? a * 16777216.0f : 0.0f);   /* units of 2^-24 */
    uint32_t h = a < 6.103515625e-05f ? subnormal : normal;
    h = magnitude > 0x7F800000u ? 0x7E00u : (magnitude == 0x7F800000u ? 0x7C00u : h);
    return (uint16_t)(((bits_of(x) >> 16) & 0x8000u) | h);
}

/* x <- (round_fp16(x * pre) if fp16 else x * pre) * post over one row; returns the row's max,
   NaN if any value is NaN, and stores its min (of the values that are not NaN) in *low. A max and
   min do not depend on the order the values are met in, but for the sign of a zero: a max of zero
   is returned as +0 (adding +0), so it does not follow the vector width either. */
INLINE float prepare_row(float *x, int64_t n, float pre, int fp16, float post, float *low) {
    float top = -INFINITY, bottom = INFINITY;
    int nan = 0;
#pragma omp simd reduction(max:top) reduction(min:bottom) reduction(|:nan)
    for (int64_t j = 0; j < n; ++j) {
        float v = x[j] * pre;
        if (fp16) v = round_fp16(v);
        v *= post;
        x[j] = v;
        top = v > top ? v : top;
        bottom = v < bottom ? v : bottom;
        nan |= v != v;
    }
    *low = bottom;
    return nan ? NAN : top + 0.0f;
}

#ifdef ISA_LEVELS
/* prepare_row's fp16 case with F16C (every AVX2 and AVX-512 CPU has it): a conversion to fp16 and
   back is round_fp16 (to nearest even, infinite from 65520 on) in two instructions; the max and min
   are the same values, as is the NaN (only its payload may differ). */
ON_AVX2 static float prepare_row_f16c(float *x, int64_t n, float pre, float post, float *low) {
    __m256 factor = _mm256_set1_ps(pre), scale = _mm256_set1_ps(post);
    __m256 top = _mm256_set1_ps(-INFINITY), bottom = _mm256_set1_ps(INFINITY), nan = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + j), factor);
        v = _mm256_mul_ps(_mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT)), scale);
        _mm256_storeu_ps(x + j, v);
        top = _mm256_max_ps(v, top);              /* the second operand where v is NaN */
        bottom = _mm256_min_ps(v, bottom);
        nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    }
    float high = prepare_row(x + j, n - j, pre, 1, post, low);       /* the last n % 8, then the lanes */
    int any_nan = high != high;
    float lanes[3][8];
    _mm256_storeu_ps(lanes[0], top), _mm256_storeu_ps(lanes[1], bottom), _mm256_storeu_ps(lanes[2], nan);
    for (int l = 0; l < 8; ++l) {
        high = lanes[0][l] > high ? lanes[0][l] : high;
        *low = lanes[1][l] < *low ? lanes[1][l] : *low;
        any_nan |= lanes[2][l] != 0.0f;
    }
    return any_nan ? NAN : high + 0.0f;
}
#endif

/* prepare_row, with F16C for the fp16 case where the CPU runs it. */
INLINE float prepare_scores(float *x, int64_t n, float pre, int fp16, float post, float *low) {
#ifdef ISA_LEVELS
    if (fp16 && aclemu_isa_in_use != ISA_BASELINE) return prepare_row_f16c(x, n, pre, post, low);
#endif
    return fp16 ? prepare_row(x, n, pre, 1, post, low) : prepare_row(x, n, pre, 0, post, low);
}

/* e^(x[j] - shift): joined from the parts exp_normal_split left in x and t (`split`), or whole. */
INLINE float exp_at(const float *x, const float *t, int64_t j, float shift, int split, int normal, int finite) {
    if (split) return exp_normal_join(t[j], x[j]);
    return normal ? exp_normal(x[j] - shift) : (finite ? exp_finite(x[j] - shift) : exp_any(x[j] - shift));
}

/* x <- round_to(exp(x - shift)) over one row, where x <= shift, so the exponentials lie in [0, 1];
   returns their sum before rounding. `finite`: shift is finite and no x is NaN, so x - shift is
   never NaN; otherwise NaNs pass through. `normal`: besides, every x - shift is at least
   EXP_NORMAL_LOW (the exponentials are normal numbers, exp_normal); `fp16_normal`: besides, every
   x - shift is at least FP16_NORMAL_EXP_LOW, so an fp16 rounding needs no subnormal step. (An fp16
   rounding of a value in [0, 1] needs neither the sign nor the overflow step, a bf16 one no NaN
   check when finite.) `split`: normal and n <= SPLIT_ROW, exp_normal runs in two passes. */
INLINE float exp_row(float *x, int64_t n, float shift, int rounding, int finite, int normal, int fp16_normal,
                     int split) {
    float sum[SUM_LANES] = {0};
    float t[SPLIT_ROW];
    if (split) exp_normal_split(x, t, n, shift);
    if (fp16_normal) {                   /* (exp_row_cases passes it for the fp16 roundings only) */
        FOR_LANES(j, n, {
            float e = exp_at(x, t, j, shift, split, 1, 1);
            sum[l] += e;
            x[j] = rounding == FP16_AWAY ? round_fp16_half_away_normal(e) : round_fp16_even_normal(e);
        })
        return lanes_total(sum);
    }
    if (finite && rounding == FP16_AWAY) {
        /* Normal fp16 results (the common case) cost two integer steps here; exponentials below
           2^-14 stay as they are and, if the row has any, a second pass puts them on the 2^-24
           grid (rounding them twice would not be CAST_ROUND). */
        float low[SUM_LANES];
        for (int l = 0; l < SUM_LANES; ++l) low[l] = 1.0f;
        FOR_LANES(j, n, {
            float e = exp_at(x, t, j, shift, split, normal, 1);
            sum[l] += e;
            low[l] = e < low[l] ? e : low[l];
            x[j] = e < FP16_MIN_NORMAL ? e : round_fp16_half_away_normal(e);
        })
        int small = 0;
        for (int l = 0; l < SUM_LANES; ++l) small |= low[l] < FP16_MIN_NORMAL;
        if (small) {
#pragma omp simd
            for (int64_t j = 0; j < n; ++j)
                x[j] = x[j] < FP16_MIN_NORMAL ? round_fp16_half_away_subnormal(x[j]) : x[j];
        }
        return lanes_total(sum);
    }
    FOR_LANES(j, n, {
        float e = exp_at(x, t, j, shift, split, normal, finite);
        sum[l] += e;
        if (rounding == FP16_EVEN) x[j] = round_fp16_nonnegative(e);
        else if (finite && rounding == BF16_AWAY) x[j] = round_bf16_half_away_number(e);
        else x[j] = round_to(e, rounding);
    })
    return lanes_total(sum);
}

/* exp_row compiled for each case of `finite`, `normal` and `fp16_normal` (each implies the one
   before; fp16_normal matters to the fp16 roundings only), normal rows split where they fit. */
INLINE float exp_row_cases(float *x, int64_t n, float shift, int rounding, int finite, int normal, int fp16_normal) {
    int split = normal && n <= SPLIT_ROW;
    if (fp16_normal && (rounding == FP16_AWAY || rounding == FP16_EVEN))
        return split ? exp_row(x, n, shift, rounding, 1, 1, 1, 1) : exp_row(x, n, shift, rounding, 1, 1, 1, 0);
    if (normal)
        return split ? exp_row(x, n, shift, rounding, 1, 1, 0, 1) : exp_row(x, n, shift, rounding, 1, 1, 0, 0);
    return finite ? exp_row(x, n, shift, rounding, 1, 0, 0, 0) : exp_row(x, n, shift, rounding, 0, 0, 0, 0);
}

INLINE float exp_row_rounded(float *x, int64_t n, float shift, int rounding, int finite, int normal, int fp16_normal) {
    switch (rounding) {
    case FP16_EVEN: return exp_row_cases(x, n, shift, FP16_EVEN, finite, normal, fp16_normal);
    case BF16_AWAY: return exp_row_cases(x, n, shift, BF16_AWAY, finite, normal, fp16_normal);
    case FP16_AWAY: return exp_row_cases(x, n, shift, FP16_AWAY, finite, normal, fp16_normal);
    case BF16_EVEN: return exp_row_cases(x, n, shift, BF16_EVEN, finite, normal, fp16_normal);
    default: return exp_row_cases(x, n, shift, KEEP_FP32, finite, normal, fp16_normal);
    }
}

/* Rows of `cols` scores, `ld` apart, prepared in place as in prepare_row. */
INLINE void scale_scores(float *x, int64_t rows, int64_t cols, int64_t ld, float pre, int fp16, float post) {
    float low;
    for (int64_t i = 0; i < rows; ++i) {
        prepare_scores(x + i * ld, cols, pre, fp16, post, &low);
    }
}
DISPATCHED(scale_scores, (float *x, int64_t rows, int64_t cols, int64_t ld, float pre, int fp16, float post),
           (x, rows, cols, ld, pre, fp16, post))

/* One key block of the online softmax (rows `ld` apart), row by row: scores are prepared as in
   aclemu_scale_scores, the running max m moves to max(m, block max), alpha = exp(m_old - m_new)
   rescales the running sum l, and the block becomes P = round_to(exp(S - m_new)) with
   l += sum exp(S - m_new). A row whose max is still -inf (no key yet) shifts by 0 so its
   exponentials are 0, not NaN. The alphas and sums of each GROUP_ROWS rows are updated together,
   in one vector loop instead of a scalar exponential per row. */
#define GROUP_ROWS 64
INLINE void softmax_block(float *s, int64_t rows, int64_t cols, int64_t ld, float pre, int fp16, float post,
                          float *row_max, float *row_sum, float *alpha, int rounding) {
    for (int64_t i0 = 0; i0 < rows; i0 += GROUP_ROWS) {
        int64_t count = rows - i0 < GROUP_ROWS ? rows - i0 : GROUP_ROWS;
        float sums[GROUP_ROWS];
        for (int64_t i = i0; i < i0 + count; ++i) {
            float *x = s + i * ld;
            float low;
            float top = prepare_scores(x, cols, pre, fp16, post, &low);
            float old = row_max[i];
            float now = top != top ? top : (top > old ? top : old);
            float shift = now == -INFINITY ? 0.0f : now;
            int finite = isfinite(shift);
            /* x - shift rounds monotonically, so low - shift bounds every difference from below */
            sums[i - i0] = exp_row_rounded(x, cols, shift, rounding, finite, finite && low - shift >= EXP_NORMAL_LOW,
                                           finite && low - shift >= FP16_NORMAL_EXP_LOW);
            alpha[i] = old - shift;
            row_max[i] = now;
        }
#pragma omp simd
        for (int64_t i = i0; i < i0 + count; ++i) {
            alpha[i] = exp_any(alpha[i]);
            row_sum[i] = row_sum[i] * alpha[i] + sums[i - i0];
        }
    }
}
DISPATCHED(softmax_block, (float *s, int64_t rows, int64_t cols, int64_t ld, float pre, int fp16, float post,
           float *row_max, float *row_sum, float *alpha, int rounding),
           (s, rows, cols, ld, pre, fp16, post, row_max, row_sum, alpha, rounding))

/* The attention backward's scores after the matmul, in place: (x + pse) * scale with pse_first
   (pseType 1), else x * scale + pse; x * scale without pse (NULL). Each step rounded, as numpy's. */
INLINE void bias_scale(float *x, const float *pse, int64_t n, float scale, int pse_first) {
    if (!pse) {
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) x[j] = x[j] * scale;
    } else if (pse_first) {
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) x[j] = (x[j] + pse[j]) * scale;
    } else {
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) x[j] = x[j] * scale + pse[j];
    }
}

/* The attention backward's probabilities, P = exp(S - m) / l in place, row by row. m and l are
   the forward's softmax statistics: one per row (lanes == 1) or `lanes` per row, column j reading
   lane (lane0 + j) % lanes. */
INLINE void softmax_probs(float *s, int64_t rows, int64_t cols, const float *row_max, const float *row_sum,
                          int64_t lanes, int64_t lane0) {
    for (int64_t i = 0; i < rows; ++i) {
        float *x = s + i * cols;
        const float *m = row_max + i * lanes, *l = row_sum + i * lanes;
        if (lanes == 1) {
#pragma omp simd
            for (int64_t j = 0; j < cols; ++j) x[j] = exp_any(x[j] - m[0]) / l[0];
        } else {
            for (int64_t j = 0; j < cols; ++j) {
                int64_t lane = (lane0 + j) % lanes;
                x[j] = exp_any(x[j] - m[lane]) / l[lane];
            }
        }
    }
}
DISPATCHED(softmax_probs, (float *s, int64_t rows, int64_t cols, const float *row_max, const float *row_sum,
           int64_t lanes, int64_t lane0),
           (s, rows, cols, row_max, row_sum, lanes, lane0))

INLINE void round_product_loop(float *dst, const float *a, const float *b, int64_t n, int rounding) {
    if (b) {
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) dst[i] = round_to(a[i] * b[i], rounding);
    } else {
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) dst[i] = round_to(a[i], rounding);
    }
}

/* dst = round_to(a * b), or round_to(a) when b is NULL; dst may be a. */
INLINE void round_product(float *dst, const float *a, const float *b, int64_t n, int rounding) {
    switch (rounding) {
    case FP16_EVEN: round_product_loop(dst, a, b, n, FP16_EVEN); break;
    case BF16_AWAY: round_product_loop(dst, a, b, n, BF16_AWAY); break;
    case FP16_AWAY: round_product_loop(dst, a, b, n, FP16_AWAY); break;
    case BF16_EVEN: round_product_loop(dst, a, b, n, BF16_EVEN); break;
    default: round_product_loop(dst, a, b, n, KEEP_FP32);
    }
}
DISPATCHED(round_product, (float *dst, const float *a, const float *b, int64_t n, int rounding),
           (dst, a, b, n, rounding))

INLINE void softmax_grad_loop(float *grad, const float *probs, const float *keep, const float *dsum,
                              int64_t rows, int64_t cols, int rounding) {
    for (int64_t i = 0; i < rows; ++i) {
        float *g = grad + i * cols;
        const float *p = probs + i * cols, *k = keep ? keep + i * cols : NULL;
        float d = dsum[i];
        if (k) {
#pragma omp simd
            for (int64_t j = 0; j < cols; ++j) g[j] = round_to((g[j] * k[j] - d) * p[j], rounding);
        } else {
#pragma omp simd
            for (int64_t j = 0; j < cols; ++j) g[j] = round_to((g[j] - d) * p[j], rounding);
        }
    }
}

/* The score gradient dS = round_to(P * (dP * keep - D)) in place over dP, row by row, with
   D = rowsum(dY * O) per row and keep (the dropout factors) NULL when there is no dropout. */
INLINE void softmax_grad(float *grad, const float *probs, const float *keep, const float *dsum,
                         int64_t rows, int64_t cols, int rounding) {
    switch (rounding) {
    case FP16_EVEN: softmax_grad_loop(grad, probs, keep, dsum, rows, cols, FP16_EVEN); break;
    case BF16_AWAY: softmax_grad_loop(grad, probs, keep, dsum, rows, cols, BF16_AWAY); break;
    case FP16_AWAY: softmax_grad_loop(grad, probs, keep, dsum, rows, cols, FP16_AWAY); break;
    case BF16_EVEN: softmax_grad_loop(grad, probs, keep, dsum, rows, cols, BF16_EVEN); break;
    default: softmax_grad_loop(grad, probs, keep, dsum, rows, cols, KEEP_FP32);
    }
}
DISPATCHED(softmax_grad, (float *grad, const float *probs, const float *keep, const float *dsum, int64_t rows,
           int64_t cols, int rounding),
           (grad, probs, keep, dsum, rows, cols, rounding))

/* Whether every x - m of a row lies in [EXP_NORMAL_LOW, 0], where exp_normal gives e^y. */
INLINE int exp_normal_fits(const float *x, int64_t n, float m) {
    int outside = 0;                     /* (NaN compares false, so it is outside too) */
#pragma omp simd reduction(|:outside)
    for (int64_t j = 0; j < n; ++j) outside |= !(x[j] - m >= EXP_NORMAL_LOW && x[j] - m <= 0.0f);
    return !outside;
}

/* One row of a block of the attention backward after its two matmuls (attention_grad_blocks.c), in
   one call: x = bias_scale of the row's scores; P = softmax_probs of x (m and l: `lanes` per row,
   column j reading lane (lane0 + j) % lanes), masked columns (may be NULL) taking their lane's
   fill; dropped = round_product(P, keep); grad = softmax_grad over the row's dP. With one lane and
   every x - m in [EXP_NORMAL_LOW, 0], as the forward's statistics make them, P takes exp_normal's
   shorter path: the same results, so the same bits. */
INLINE void grad_scores_row(float *x, const float *pse, float scale, int pse_first, const float *row_max,
                            const float *row_sum, int64_t lanes, int64_t lane0, const uint8_t *masked,
                            const float *fill, const float *keep, float dsum, float *dropped, float *grad,
                            int64_t cols, int rounding) {
    bias_scale(x, pse, cols, scale, pse_first);
    if (lanes == 1 && exp_normal_fits(x, cols, row_max[0])) {
        float m = row_max[0], l = row_sum[0];
#pragma omp simd
        for (int64_t j = 0; j < cols; ++j) x[j] = exp_normal(x[j] - m) / l;
    } else {
        softmax_probs(x, 1, cols, row_max, row_sum, lanes, lane0);
    }
    if (masked)
        for (int64_t j = 0; j < cols; ++j)
            if (masked[j]) x[j] = fill[(lane0 + j) % lanes];
    round_product(dropped, x, keep, cols, rounding);
    softmax_grad(grad, x, keep, &dsum, 1, cols, rounding);
}
DISPATCHED(grad_scores_row, (float *x, const float *pse, float scale, int pse_first, const float *row_max,
           const float *row_sum, int64_t lanes, int64_t lane0, const uint8_t *masked, const float *fill,
           const float *keep, float dsum, float *dropped, float *grad, int64_t cols, int rounding),
           (x, pse, scale, pse_first, row_max, row_sum, lanes, lane0, masked, fill, keep, dsum, dropped, grad,
            cols, rounding))

#if defined(__x86_64__)
#include <emmintrin.h>
#define STREAMING 1
#endif

/* Large copies of large pieces (a paged-cache scatter of whole token rows) write with non-temporal
   stores: a destination line is written whole, so it need not be read into the cache first, which
   halves the memory traffic of scattered writes. Pieces below STREAM_MIN bytes would leave lines
   part written and copy normally, except runs of 32-byte NZ pieces side by side, which fill whole
   lines (copy_adjacent_pieces), and NZ pieces scattered over a block (copy_group). */
enum { STREAM_MIN = 256, STREAM_CALL_MIN = 1 << 20 };

/* memcpy of n bytes that may use non-temporal stores (`stream`): for a 16-byte aligned dst, no
   overlap with src, and n a multiple of 64. */
static void copy_bytes(char *to, const char *from, int64_t n, int stream) {
#ifdef STREAMING
    if (stream && n >= STREAM_MIN && n % 64 == 0 && ((uintptr_t)to & 15) == 0
        && (to + n <= from || from + n <= to)) {
        for (int64_t i = 0; i < n; i += 64) {
            __m128i a = _mm_loadu_si128((const __m128i *)(from + i));
            __m128i b = _mm_loadu_si128((const __m128i *)(from + i + 16));
            __m128i c = _mm_loadu_si128((const __m128i *)(from + i + 32));
            __m128i d = _mm_loadu_si128((const __m128i *)(from + i + 48));
            _mm_stream_si128((__m128i *)(to + i), a);
            _mm_stream_si128((__m128i *)(to + i + 16), b);
            _mm_stream_si128((__m128i *)(to + i + 32), c);
            _mm_stream_si128((__m128i *)(to + i + 48), d);
        }
        return;
    }
#endif
    (void)stream;
    memmove(to, from, (size_t)n);
}

/* `count` 32-byte NZ pieces written side by side (a block's tokens of one piece, the paged-cache
   scatter of consecutive slots), read `src_step` bytes apart: the whole 64-byte lines among them are
   written with non-temporal stores, as copy_bytes does for whole rows; a part line at either end
   copies normally, so no line is left part written by the streamed stores. */
static void copy_adjacent_pieces(char *to, const char *from, int64_t count, int64_t src_step) {
    int64_t k = 0;
#ifdef STREAMING
    int64_t reach = (count - 1) * src_step;
    const char *low = from + (reach < 0 ? reach : 0), *high = from + (reach > 0 ? reach : 0) + 32;
    if (to + count * 32 <= low || high <= to) {
        for (; k < count && ((uintptr_t)(to + k * 32) & 63) != 0; ++k) memcpy(to + k * 32, from + k * src_step, 32);
        for (; k + 2 <= count; k += 2) {
            const char *a = from + k * src_step, *b = a + src_step;
            __m128i a0 = _mm_loadu_si128((const __m128i *)a), a1 = _mm_loadu_si128((const __m128i *)(a + 16));
            __m128i b0 = _mm_loadu_si128((const __m128i *)b), b1 = _mm_loadu_si128((const __m128i *)(b + 16));
            __m128i *line = (__m128i *)(to + k * 32);
            _mm_stream_si128(line, a0);
            _mm_stream_si128(line + 1, a1);
            _mm_stream_si128(line + 2, b0);
            _mm_stream_si128(line + 3, b1);
        }
    }
#endif
    for (; k < count; ++k) memcpy(to + k * 32, from + k * src_step, 32);
}

/* `count` token rows out of a PA_NZ block (the gather): token k's piece p sits at
   from + p * src_stride + k * 32 and goes to to + k * dst_step + p * 32. Two pieces at a time over
   all the tokens: the source is read as two sequential streams, and each token's two pieces are one
   whole 64-byte destination line, written with non-temporal stores (so it is never read first).
   For a 16-byte aligned destination whose rows step by a multiple of 16, no overlap, and
   `stream`; returns how many leading pieces it copied (the even part of `pieces`). */
static int64_t copy_nz_rows(char *to, const char *from, int64_t count, int64_t dst_step, int64_t pieces,
                            int64_t src_stride) {
#ifdef STREAMING
    const char *src_end = from + (pieces - 1) * src_stride + count * 32;
    char *dst_end = to + (count - 1) * dst_step + pieces * 32;
    if (((uintptr_t)to & 15) || dst_step % 16 || !(dst_end <= from || src_end <= to)) return 0;
    int64_t p = 0;
    for (; p + 2 <= pieces; p += 2) {
        const char *a = from + p * src_stride, *b = a + src_stride;
        for (int64_t k = 0; k < count; ++k) {
            __m128i a0 = _mm_loadu_si128((const __m128i *)(a + 32 * k));
            __m128i a1 = _mm_loadu_si128((const __m128i *)(a + 32 * k + 16));
            __m128i b0 = _mm_loadu_si128((const __m128i *)(b + 32 * k));
            __m128i b1 = _mm_loadu_si128((const __m128i *)(b + 32 * k + 16));
            __m128i *line = (__m128i *)(to + k * dst_step + p * 32);
            _mm_stream_si128(line, a0);
            _mm_stream_si128(line + 1, a1);
            _mm_stream_si128(line + 2, b0);
            _mm_stream_si128(line + 3, b1);
        }
    }
    return p;
#else
    (void)to, (void)from, (void)count, (void)dst_step, (void)pieces, (void)src_stride;
    return 0;
#endif
}

/* A run of `count` pairs whose destinations step by dst_step and sources by src_step, no two pairs
   sharing a byte: piece-major, so each piece's writes (the paged-cache scatter: pairs' pieces side
   by side) or reads (the gather: a block's tokens side by side) are one contiguous stretch; a run
   of whole rows is one copy. */
static void copy_run(char *to, const char *from, int64_t count, int64_t dst_step, int64_t src_step, int64_t pieces,
                     int64_t piece_bytes, int64_t dst_stride, int64_t src_stride, int stream) {
    if (pieces == 1 && src_step == piece_bytes && dst_step == piece_bytes) {
        copy_bytes(to, from, count * piece_bytes, stream);
        return;
    }
    int64_t p = 0;
    if (piece_bytes == 32 && stream && src_step == 32 && dst_stride == 32 && dst_step >= pieces * 32)
        p = copy_nz_rows(to, from, count, dst_step, pieces, src_stride);
    for (; p < pieces; ++p) {
        char *t = to + p * dst_stride;
        const char *f = from + p * src_stride;
        if (piece_bytes == 32 && stream && dst_step == 32) {
            copy_adjacent_pieces(t, f, count, src_step);
        } else if (piece_bytes == 32) {     /* NZ pieces: a fixed-size copy the compiler inlines */
            for (int64_t k = 0; k < count; ++k) memcpy(t + k * dst_step, f + k * src_step, 32);
        } else {
            for (int64_t k = 0; k < count; ++k) copy_bytes(t + k * dst_step, f + k * src_step, piece_bytes, stream);
        }
    }
}

/* A 32-byte NZ piece written with non-temporal stores (to a 16-byte aligned address). */
static inline void stream_piece(char *to, const char *from) {
#ifdef STREAMING
    __m128i a = _mm_loadu_si128((const __m128i *)from), b = _mm_loadu_si128((const __m128i *)(from + 16));
    _mm_stream_si128((__m128i *)to, a);
    _mm_stream_si128((__m128i *)(to + 16), b);
#else
    memcpy(to, from, 32);
#endif
}

/* Pairs with rising destinations that all start within one dst_stride (a PA_NZ block's slots in
   slot order), piece-major: each piece's writes of the group land in one stretch of dst_stride bytes
   (a page of the cache) instead of every pair touching `pieces` pages. In a large call (`stream`)
   32-byte pieces go out with non-temporal stores even though they fill only half a line: scattered
   slots (random slot mappings) rarely share a line, and reading each line into the cache before
   writing half of it cost more (measured on AMD EPYC: 1.3-1.5x the time of the streamed stores). */
static void copy_group(char *dst, const char *src, const int64_t *dst_offset, const int64_t *src_offset,
                       int64_t count, int64_t pieces, int64_t piece_bytes, int64_t dst_stride, int64_t src_stride,
                       int stream) {
    int aligned = stream && piece_bytes == 32 && dst_stride % 16 == 0;
    for (int64_t k = 0; aligned && k < count; ++k) aligned = ((uintptr_t)(dst + dst_offset[k]) & 15) == 0;
    for (int64_t p = 0; p < pieces; ++p) {
        char *t = dst + p * dst_stride;
        const char *f = src + p * src_stride;
        if (aligned)
            for (int64_t k = 0; k < count; ++k) stream_piece(t + dst_offset[k], f + src_offset[k]);
        else if (piece_bytes == 32)
            for (int64_t k = 0; k < count; ++k) memcpy(t + dst_offset[k], f + src_offset[k], 32);
        else
            for (int64_t k = 0; k < count; ++k) memcpy(t + dst_offset[k], f + src_offset[k], (size_t)piece_bytes);
    }
}

/* How many pairs from the first form a group for copy_group: destinations rising by at least
   piece_bytes, all within dst_stride - piece_bytes of the first. Then no two of the group's pieces
   share a byte (pieces p and q of two pairs lie at least dst_stride - that reach apart), so their
   order does not matter. */
static int64_t group_length(const int64_t *dst_offset, int64_t pairs, int64_t piece_bytes, int64_t dst_stride) {
    int64_t n = 1;
    while (n < pairs && dst_offset[n] >= dst_offset[n - 1] + piece_bytes
           && dst_offset[n] + piece_bytes <= dst_offset[0] + dst_stride)
        ++n;
    return n;
}

enum { GROUP_RUN_MAX = 8 };   /* runs shorter than this inside a group are copied with the group */

/* For each pair i: `pieces` pieces of `piece_bytes` from src + src_offset[i] + p * src_stride to
   dst + dst_offset[i] + p * dst_stride, pairs in order (a later pair overwrites an earlier one).
   Pairs whose offsets keep constant steps form a run copied piece-major, which changes nothing as
   long as its pairs write disjoint bytes: destinations piece_bytes apart with each pair's pieces
   further apart than the run is long, or destinations a whole pair's span apart. Short runs among
   pairs that form a group (group_length) are copied as the group. */
void aclemu_copy_pieces(char *dst, const char *src, const int64_t *dst_offset, const int64_t *src_offset,
                        int64_t pairs, int64_t pieces, int64_t piece_bytes, int64_t dst_stride,
                        int64_t src_stride) {
    int64_t span = (pieces - 1) * dst_stride + piece_bytes;
    int stream = pairs * pieces * piece_bytes >= STREAM_CALL_MIN;
    for (int64_t i = 0; i < pairs;) {
        int64_t dst_step = i + 1 < pairs ? dst_offset[i + 1] - dst_offset[i] : piece_bytes;
        int64_t src_step = i + 1 < pairs ? src_offset[i + 1] - src_offset[i] : piece_bytes;
        int64_t longest = 1;
        if (dst_step == piece_bytes)
            longest = pieces == 1 ? pairs : dst_stride / piece_bytes;
        else if (dst_stride >= 0 && dst_step >= span)
            longest = pairs;
        int64_t count = 1;
        while (count < longest && i + count < pairs && dst_offset[i + count] == dst_offset[i + count - 1] + dst_step
               && src_offset[i + count] == src_offset[i + count - 1] + src_step)
            ++count;
        if (count < GROUP_RUN_MAX && pieces > 1) {
            int64_t group = group_length(dst_offset + i, pairs - i, piece_bytes, dst_stride);
            if (group > count) {
                copy_group(dst, src, dst_offset + i, src_offset + i, group, pieces, piece_bytes, dst_stride,
                           src_stride, stream);
                i += group;
                continue;
            }
        }
        copy_run(dst + dst_offset[i], src + src_offset[i], count, dst_step, src_step, pieces, piece_bytes, dst_stride,
                 src_stride, stream);
        i += count;
    }
#ifdef STREAMING
    if (stream) _mm_sfence();      /* the streamed stores are visible before anyone reads them */
#endif
}

/* dst[i * dst_row_stride + j] = src[i * src_row_stride + j] widened to fp32, for src in fp16 (kind 0)
   or bf16 (kind 1). */
INLINE void widen(float *dst, const uint16_t *src, int64_t rows, int64_t cols, int64_t src_row_stride,
                  int64_t dst_row_stride, int kind) {
    for (int64_t i = 0; i < rows; ++i) {
        const uint16_t *from = src + i * src_row_stride;
        float *to = dst + i * dst_row_stride;
        if (kind == 0) {
#pragma omp simd
            for (int64_t j = 0; j < cols; ++j) to[j] = fp16_value(from[j]);
        } else {
#pragma omp simd
            for (int64_t j = 0; j < cols; ++j) to[j] = float_of((uint32_t)from[j] << 16);
        }
    }
}
DISPATCHED(widen, (float *dst, const uint16_t *src, int64_t rows, int64_t cols, int64_t src_row_stride,
           int64_t dst_row_stride, int kind),
           (dst, src, rows, cols, src_row_stride, dst_row_stride, kind))

/* acc[pos[i]] += vals[i] for rows i = 0..n-1 in order, rows of `cols` floats (acc rows `acc_stride`
   apart): a position given twice gets both additions, in the order given. */
INLINE void scatter_add_rows(float *acc, int64_t acc_stride, const int64_t *pos, const float *vals, int64_t n,
                             int64_t cols) {
    for (int64_t i = 0; i < n; ++i) {
        float *to = acc + pos[i] * acc_stride;
        const float *from = vals + i * cols;
#pragma omp simd
        for (int64_t j = 0; j < cols; ++j) to[j] += from[j];
    }
}
DISPATCHED(scatter_add_rows, (float *acc, int64_t acc_stride, const int64_t *pos, const float *vals, int64_t n,
           int64_t cols),
           (acc, acc_stride, pos, vals, n, cols))

/* dst[i] = the fp16 bits of src[i] rounded to nearest even (infinite from 65520 on). */
INLINE void narrow_fp16(uint16_t *dst, const float *src, int64_t n) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) dst[i] = fp16_bits(round_fp16(src[i]));
}
DISPATCHED(narrow_fp16, (uint16_t *dst, const float *src, int64_t n),
           (dst, src, n))

/* ---- IncreFlashAttention (decode): scores and P V straight from a (paged) key/value cache ----
 *
 * One query token per head: per key/value head h, `groups` query rows meet the cache rows that
 * start h * head_stride + offsets[j] elements from `base`, each D contiguous values of kind 0 (fp16), 1
 * (bf16) or 2 (int8, dequantised as (x + offset[h][d]) * scale[h][d]). Each cache row is read once
 * and widened in registers, so the cache is never copied or widened as a whole. The generic loops,
 * the AVX2/F16C and the AVX-512 paths give the same bits: a dot product sums in SUM_LANES lanes,
 * and a sum over rows adds row after row onto the output. */
INLINE void decode_row(float *to, const void *base, int64_t offset, int64_t d, int kind, const float *scale,
                       const float *shift) {
    if (kind == 0) {
        const uint16_t *from = (const uint16_t *)base + offset;
#pragma omp simd
        for (int64_t e = 0; e < d; ++e) to[e] = fp16_value(from[e]);
    } else if (kind == 1) {
        const uint16_t *from = (const uint16_t *)base + offset;
#pragma omp simd
        for (int64_t e = 0; e < d; ++e) to[e] = float_of((uint32_t)from[e] << 16);
    } else {
        const int8_t *from = (const int8_t *)base + offset;
#pragma omp simd
        for (int64_t e = 0; e < d; ++e) to[e] = ((float)from[e] + shift[e]) * scale[e];
    }
}

#define DECODE_MAX_D 512

#ifdef ISA_LEVELS
/* fp16 rows with AVX2 + F16C: each key/value row is loaded and converted 8 values at a time in
   registers (vcvtph2ps is exact) and meets up to four query/output rows per pass. Products and
   sums are separate roundings, as everywhere here (no fused multiply-add). */
#define F16C_TARGET ON_AVX2
F16C_TARGET static inline __m256 f16c_load(const uint16_t *p) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

/* lanes_total of 8 lanes: halves added, then their halves, then the last two. */
F16C_TARGET static inline float f16c_sum(__m256 v) {
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    return _mm_cvtss_f32(_mm_add_ss(x, _mm_shuffle_ps(x, x, 1)));
}

F16C_TARGET static void scores_f16c(float *scores, const float *q, int64_t heads, int64_t groups,
                                    const uint16_t *base, const int64_t *offsets, int64_t head_stride,
                                    int64_t rows, int64_t d) {
    for (int64_t h = 0; h < heads; ++h)
        for (int64_t j = 0; j < rows; ++j) {
            const uint16_t *row = base + head_stride * h + offsets[j];
            for (int64_t g = 0; g < groups; g += 4) {
                int64_t n = groups - g < 4 ? groups - g : 4;
                const float *qs[4];
                for (int64_t i = 0; i < 4; ++i) qs[i] = q + (h * groups + g + (i < n ? i : 0)) * d;
                __m256 a[4][2];                 /* SUM_LANES lanes per dot product: two vectors */
                for (int64_t i = 0; i < 4; ++i) a[i][0] = a[i][1] = _mm256_setzero_ps();
                for (int64_t e = 0; e < d; e += 8) {
                    __m256 k = f16c_load(row + e);
                    int half = (int)(e / 8 % 2);
                    for (int64_t i = 0; i < 4; ++i)
                        a[i][half] = _mm256_add_ps(a[i][half], _mm256_mul_ps(_mm256_loadu_ps(qs[i] + e), k));
                }
                float dots[4];
                for (int64_t i = 0; i < 4; ++i) dots[i] = f16c_sum(_mm256_add_ps(a[i][0], a[i][1]));
                for (int64_t i = 0; i < n; ++i) scores[(h * groups + g + i) * rows + j] = dots[i];
            }
        }
}

F16C_TARGET static void values_f16c(float *acc, const float *p, int64_t heads, int64_t groups,
                                    const uint16_t *base, const int64_t *offsets, int64_t head_stride,
                                    int64_t rows, int64_t d) {
    /* Per 16 columns of up to four output rows, the sums stay in registers over all the rows. */
    for (int64_t h = 0; h < heads; ++h)
        for (int64_t g = 0; g < groups; g += 4) {
            int64_t n = groups - g < 4 ? groups - g : 4;
            const float *w[4];
            for (int64_t i = 0; i < 4; ++i) w[i] = p + (h * groups + g + (i < n ? i : 0)) * rows;
            for (int64_t e = 0; e < d; e += 16) {
                float *out = acc + (h * groups + g) * d + e;
                __m256 a[4][2];
                int64_t width = d - e < 16 ? 1 : 2;     /* d is a multiple of 8 */
                for (int64_t i = 0; i < 4; ++i)
                    for (int64_t c = 0; c < 2; ++c)
                        a[i][c] = i < n && c < width ? _mm256_loadu_ps(out + i * d + 8 * c) : _mm256_setzero_ps();
                for (int64_t j = 0; j < rows; ++j) {
                    const uint16_t *row = base + head_stride * h + offsets[j] + e;
                    __m256 v0 = f16c_load(row), v1 = width == 2 ? f16c_load(row + 8) : _mm256_setzero_ps();
                    for (int64_t i = 0; i < 4; ++i) {
                        __m256 weight = _mm256_set1_ps(w[i][j]);
                        a[i][0] = _mm256_add_ps(a[i][0], _mm256_mul_ps(weight, v0));
                        a[i][1] = _mm256_add_ps(a[i][1], _mm256_mul_ps(weight, v1));
                    }
                }
                for (int64_t i = 0; i < n; ++i)
                    for (int64_t c = 0; c < width; ++c) _mm256_storeu_ps(out + i * d + 8 * c, a[i][c]);
            }
        }
}

/* AVX-512: two output rows of D = 64 or 128 columns stay in registers over all the value rows
   (16 or 32 of the 32 vector registers), so each row is converted once per pair of output rows. */
#define AVX512_TARGET ON_AVX512
AVX512_TARGET __attribute__((always_inline)) static inline void values_pair_avx512(
        float *out0, float *out1, const float *w0, const float *w1, const uint16_t *base, const int64_t *offsets,
        int64_t rows, const int64_t vecs) {
    __m512 a0[8], a1[8];
    for (int64_t c = 0; c < vecs; ++c) {
        a0[c] = _mm512_loadu_ps(out0 + 16 * c);
        a1[c] = out1 ? _mm512_loadu_ps(out1 + 16 * c) : _mm512_setzero_ps();
    }
    for (int64_t j = 0; j < rows; ++j) {
        const uint16_t *row = base + offsets[j];
        __m512 b0 = _mm512_set1_ps(w0[j]), b1 = _mm512_set1_ps(w1[j]);
        for (int64_t c = 0; c < vecs; ++c) {
            __m512 v = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(row + 16 * c)));
            a0[c] = _mm512_add_ps(a0[c], _mm512_mul_ps(b0, v));
            a1[c] = _mm512_add_ps(a1[c], _mm512_mul_ps(b1, v));
        }
    }
    for (int64_t c = 0; c < vecs; ++c) {
        _mm512_storeu_ps(out0 + 16 * c, a0[c]);
        if (out1) _mm512_storeu_ps(out1 + 16 * c, a1[c]);
    }
}

AVX512_TARGET static void values_avx512(float *acc, const float *p, int64_t heads, int64_t groups,
                                        const uint16_t *base, const int64_t *offsets, int64_t head_stride,
                                        int64_t rows, int64_t d) {
    for (int64_t h = 0; h < heads; ++h)
        for (int64_t g = 0; g < groups; g += 2) {
            int64_t first = h * groups + g, pair = g + 1 < groups;
            float *out0 = acc + first * d, *out1 = pair ? out0 + d : 0;
            const float *w0 = p + first * rows, *w1 = pair ? w0 + rows : w0;
            if (d == 128)
                values_pair_avx512(out0, out1, w0, w1, base + head_stride * h, offsets, rows, 8);
            else
                values_pair_avx512(out0, out1, w0, w1, base + head_stride * h, offsets, rows, 4);
        }
}

#endif

/* scores[(h * groups + g) * rows + j] = q[h][g] . row(h, j), for h < heads, j < rows. */
INLINE void decode_scores_loops(float *scores, const float *q, int64_t heads, int64_t groups, const void *base,
                                const int64_t *offsets, int64_t head_stride, int64_t rows, int64_t d, int kind,
                                const float *scale, const float *shift) {
    float row[DECODE_MAX_D];
    for (int64_t h = 0; h < heads; ++h) {
        const float *sc = scale ? scale + h * d : 0, *sh = shift ? shift + h * d : 0;
        for (int64_t j = 0; j < rows; ++j) {
            decode_row(row, base, head_stride * h + offsets[j], d, kind, sc, sh);
            for (int64_t g = 0; g < groups; g += 4) {   /* up to four query rows per pass over the key row */
                int64_t n = groups - g < 4 ? groups - g : 4;
                const float *qs[4];
                for (int64_t i = 0; i < 4; ++i) qs[i] = q + (h * groups + g + (i < n ? i : 0)) * d;
                float lanes[4][SUM_LANES] = {{0}};
                FOR_LANES(e, d, {
                    lanes[0][l] += qs[0][e] * row[e];
                    lanes[1][l] += qs[1][e] * row[e];
                    lanes[2][l] += qs[2][e] * row[e];
                    lanes[3][l] += qs[3][e] * row[e];
                })
                for (int64_t i = 0; i < n; ++i) scores[(h * groups + g + i) * rows + j] = lanes_total(lanes[i]);
            }
        }
    }
}

DISPATCHED(decode_scores_loops, (float *scores, const float *q, int64_t heads, int64_t groups, const void *base,
           const int64_t *offsets, int64_t head_stride, int64_t rows, int64_t d, int kind, const float *scale,
           const float *shift),
           (scores, q, heads, groups, base, offsets, head_stride, rows, d, kind, scale, shift))

/* The F16C path (AVX2 level and up) takes fp16 rows of a multiple of 8 values. */
void aclemu_decode_scores(float *scores, const float *q, int64_t heads, int64_t groups, const void *base,
                          const int64_t *offsets, int64_t head_stride, int64_t rows, int64_t d, int kind,
                          const float *scale, const float *shift) {
#ifdef ISA_LEVELS
    if (aclemu_isa_in_use >= ISA_AVX2 && kind == 0 && d % 8 == 0) {
        scores_f16c(scores, q, heads, groups, (const uint16_t *)base, offsets, head_stride, rows, d);
        return;
    }
#endif
    aclemu_decode_scores_loops(scores, q, heads, groups, base, offsets, head_stride, rows, d, kind, scale, shift);
}

/* acc[(h * groups + g) * d + e] += sum_j p[(h * groups + g) * rows + j] * row(h, j)[e]. */
INLINE void decode_values_loops(float *acc, const float *p, int64_t heads, int64_t groups, const void *base,
                                const int64_t *offsets, int64_t head_stride, int64_t rows, int64_t d, int kind,
                                const float *scale, const float *shift) {
    float row[DECODE_MAX_D];
    for (int64_t h = 0; h < heads; ++h) {
        const float *sc = scale ? scale + h * d : 0, *sh = shift ? shift + h * d : 0;
        for (int64_t j = 0; j < rows; ++j) {
            decode_row(row, base, head_stride * h + offsets[j], d, kind, sc, sh);
            int64_t g = 0;
            for (; g + 4 <= groups; g += 4) {     /* four output rows per pass over the value row */
                const float *w = p + (h * groups + g) * rows + j;
                float w0 = w[0], w1 = w[rows], w2 = w[2 * rows], w3 = w[3 * rows];
                float *o0 = acc + (h * groups + g) * d, *o1 = o0 + d, *o2 = o1 + d, *o3 = o2 + d;
#pragma omp simd
                for (int64_t e = 0; e < d; ++e) {
                    o0[e] += w0 * row[e];
                    o1[e] += w1 * row[e];
                    o2[e] += w2 * row[e];
                    o3[e] += w3 * row[e];
                }
            }
            for (; g < groups; ++g) {
                float weight = p[(h * groups + g) * rows + j];
                float *out = acc + (h * groups + g) * d;
#pragma omp simd
                for (int64_t e = 0; e < d; ++e) out[e] += weight * row[e];
            }
        }
    }
}
DISPATCHED(decode_values_loops, (float *acc, const float *p, int64_t heads, int64_t groups, const void *base,
           const int64_t *offsets, int64_t head_stride, int64_t rows, int64_t d, int kind, const float *scale,
           const float *shift),
           (acc, p, heads, groups, base, offsets, head_stride, rows, d, kind, scale, shift))

/* The AVX-512 path takes fp16 rows of D = 64 or 128, the F16C path (AVX2 level) fp16 rows of a
   multiple of 8 values. */
void aclemu_decode_values(float *acc, const float *p, int64_t heads, int64_t groups, const void *base,
                          const int64_t *offsets, int64_t head_stride, int64_t rows, int64_t d, int kind,
                          const float *scale, const float *shift) {
#ifdef ISA_LEVELS
    if (aclemu_isa_in_use == ISA_AVX512 && kind == 0 && (d == 64 || d == 128)) {
        values_avx512(acc, p, heads, groups, (const uint16_t *)base, offsets, head_stride, rows, d);
        return;
    }
    if (aclemu_isa_in_use >= ISA_AVX2 && kind == 0 && d % 8 == 0) {
        values_f16c(acc, p, heads, groups, (const uint16_t *)base, offsets, head_stride, rows, d);
        return;
    }
#endif
    aclemu_decode_values_loops(acc, p, heads, groups, base, offsets, head_stride, rows, d, kind, scale, shift);
}
/* ---- end of IncreFlashAttention ---- */

/* ---- Attention kernels' output steps: O <- O * alpha + P V per key block of the forwards, and the
 * final CAST_ROUND into the output's rows, each one pass instead of several numpy passes (and
 * temporaries) ---- */

/* acc[i][j] <- acc[i][j] * alpha[i] + add[i][j] over [rows, cols]: a product and a sum, each rounded,
   exactly as the two passes were. */
INLINE void rescale_add(float *acc, const float *alpha, const float *add, int64_t rows, int64_t cols) {
    for (int64_t i = 0; i < rows; ++i) {
        float *o = acc + i * cols;
        const float *p = add + i * cols;
        float a = alpha[i];
#pragma omp simd
        for (int64_t j = 0; j < cols; ++j) o[j] = o[j] * a + p[j];
    }
}
DISPATCHED(rescale_add, (float *acc, const float *alpha, const float *add, int64_t rows, int64_t cols),
           (acc, alpha, add, rows, cols))

/* to[j] <- x[j] / d (x[j] unless `divide`) narrowed and stored as the output dtype's bits: fp16 by
   CAST_ROUND (FP16_AWAY) or to nearest even (FP16_EVEN, as narrow_fp16), bf16 by CAST_ROUND
   (BF16_AWAY; a NaN keeps a quiet bit in the upper half) or fp32 itself (KEEP_FP32). */
INLINE void store_row(void *to, const float *x, float d, int divide, int64_t cols, int rounding) {
    if (rounding == FP16_AWAY) {
        uint16_t *h = (uint16_t *)to;
#pragma omp simd
        for (int64_t j = 0; j < cols; ++j) h[j] = fp16_bits(round_fp16_half_away(divide ? x[j] / d : x[j]));
    } else if (rounding == FP16_EVEN) {
        uint16_t *h = (uint16_t *)to;
#pragma omp simd
        for (int64_t j = 0; j < cols; ++j) h[j] = fp16_bits(round_fp16(divide ? x[j] / d : x[j]));
    } else if (rounding == BF16_AWAY) {
        uint16_t *h = (uint16_t *)to;
#pragma omp simd
        for (int64_t j = 0; j < cols; ++j) {
            float v = divide ? x[j] / d : x[j];
            uint16_t upper = (uint16_t)(bits_of(round_bf16_half_away(v)) >> 16);
            h[j] = v != v ? (uint16_t)(upper | 0x0040u) : upper;
        }
    } else {
        float *f = (float *)to;
#pragma omp simd
        for (int64_t j = 0; j < cols; ++j) f[j] = divide ? x[j] / d : x[j];
    }
}

#ifdef ISA_LEVELS
/* store_row's fp16 cases with F16C, 8 values at a time. To nearest even, the conversion itself,
   for eights without a NaN (whose bits store_row makes canonical). CAST_ROUND, where each value is
   0, at least 2^-14 in magnitude or infinite: round_fp16_half_away_normal's integer step on the
   signed bits (a carry past 65504 reaches 65536 or infinity), whose result, on the fp16 grid,
   converts exactly (from 65536 on, to infinity); eights with a NaN or an fp16 subnormal take
   store_row's loop. */
ON_AVX2 static void store_row_f16c(uint16_t *h, const float *x, float d, int divide, int64_t cols, int rounding) {
    __m256 divisor = _mm256_set1_ps(d), smallest = _mm256_set1_ps(FP16_MIN_NORMAL), zero = _mm256_setzero_ps();
    __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    __m256i half = _mm256_set1_epi32(0x1000), kept = _mm256_set1_epi32((int)0xFFFFE000u);
    int64_t j = 0;
    for (; j + 8 <= cols; j += 8) {
        __m256 v = _mm256_loadu_ps(x + j);
        if (divide) v = _mm256_div_ps(v, divisor);
        __m256 a = _mm256_and_ps(v, magnitude);
        __m256 other = rounding == FP16_EVEN ? _mm256_cmp_ps(v, v, _CMP_UNORD_Q)
            : _mm256_and_ps(_mm256_cmp_ps(a, smallest, _CMP_NGE_UQ), _mm256_cmp_ps(a, zero, _CMP_NEQ_UQ));
        if (_mm256_movemask_ps(other)) {
            store_row(h + j, x + j, d, divide, 8, rounding);
            continue;
        }
        if (rounding == FP16_AWAY)
            v = _mm256_castsi256_ps(_mm256_and_si256(_mm256_add_epi32(_mm256_castps_si256(v), half), kept));
        _mm_storeu_si128((__m128i *)(h + j), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
    store_row(h + j, x + j, d, divide, cols - j, rounding);
}
#endif

/* Row i of dst (dst_stride elements apart) <- row i of src [rows, cols] divided by divisor[i] (or
   not, when divisor is NULL), stored by store_row (F16C's where the CPU runs it). */
INLINE void store_rows(void *dst, int64_t dst_stride, const float *src, const float *divisor, int64_t rows,
                       int64_t cols, int rounding) {
    int64_t size = rounding == KEEP_FP32 ? 4 : 2;
    for (int64_t i = 0; i < rows; ++i) {
        void *to = (char *)dst + i * dst_stride * size;
#ifdef ISA_LEVELS
        if ((rounding == FP16_AWAY || rounding == FP16_EVEN) && aclemu_isa_in_use != ISA_BASELINE) {
            store_row_f16c((uint16_t *)to, src + i * cols, divisor ? divisor[i] : 1.0f, divisor != 0, cols, rounding);
            continue;
        }
#endif
        if (divisor) store_row(to, src + i * cols, divisor[i], 1, cols, rounding);
        else store_row(to, src + i * cols, 1.0f, 0, cols, rounding);
    }
}
DISPATCHED(store_rows, (void *dst, int64_t dst_stride, const float *src, const float *divisor, int64_t rows,
           int64_t cols, int rounding),
           (dst, dst_stride, src, divisor, rows, cols, rounding))
/* ---- end of the attention kernels' output steps ---- */
