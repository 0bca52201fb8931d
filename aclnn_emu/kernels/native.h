/* The header every C source of aclnn_emu.kernels._native includes: its interface (native_api.h),
 * the ISA levels and their dispatch, and the bit-level helpers the sources share. Each source
 * compiles on its own against it. */
#ifndef ACLEMU_NATIVE_H
#define ACLEMU_NATIVE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "native_api.h"

/* On x86-64 each vector loop is compiled three times, for AVX-512 (x86-64-v4), AVX2 (x86-64-v3)
   and the baseline, and a call runs the version aclemu_select_isa chose: by default the best the
   CPU has, or a lower one on request (ACLNN_EMU_ISA), so an AVX2 machine's speed can be measured
   on an AVX-512 one. Elsewhere there is one version, built for the compiler's target. The
   x86-64-v3/v4 targets and their CPU checks need GCC 12 or clang 12: an older compiler would
   build the baseline alone, whose matmul runs about 60 times slower, so it is refused here. */
#if defined(__x86_64__) && defined(__GNUC__)
#if defined(__clang__) ? __clang_major__ < 12 : __GNUC__ < 12
_Static_assert(0, "aclnn-emu: this C compiler (version " __VERSION__ ") cannot build the AVX2 and AVX-512 loops, "
                  "which need GCC 12 or clang 12 or newer; install one (e.g. gcc-12) and rebuild with it "
                  "named in CC, e.g. CC=gcc-12 pip install .");
#endif
#define ISA_LEVELS 1
#define ON_AVX512 __attribute__((target("arch=x86-64-v4,prefer-vector-width=512")))
#define ON_AVX2 __attribute__((target("arch=x86-64-v3")))
#include <immintrin.h>
#endif

/* The level the loops run at (native.c sets it). */
extern int aclemu_isa_in_use __attribute__((visibility("hidden")));
/* The per-core L1 and L2 data cache sizes in bytes the blocking is chosen by (aclemu_set_cache_sizes):
   they decide only which data stays in cache, never the order of a sum. */
extern int64_t aclemu_l1_bytes __attribute__((visibility("hidden")));
extern int64_t aclemu_l2_bytes __attribute__((visibility("hidden")));

#define INLINE static inline __attribute__((always_inline))

/* aclemu_<name>(params) running the always-inline body `name` compiled for the level in use. */
#ifdef ISA_LEVELS
#define DISPATCHED(name, params, args)                                                        \
    ON_AVX512 static void name##_avx512 params { name args; }                                 \
    ON_AVX2 static void name##_avx2 params { name args; }                                     \
    static void name##_baseline params { name args; }                                         \
    void aclemu_##name params {                                                               \
        if (aclemu_isa_in_use == ISA_AVX512) name##_avx512 args;                              \
        else if (aclemu_isa_in_use == ISA_AVX2) name##_avx2 args;                             \
        else name##_baseline args;                                                            \
    }
#else
#define DISPATCHED(name, params, args) void aclemu_##name params { name args; }
#endif

/* Every sum over a row runs in one order at every vector width: term j goes to partial
   lane j % 16 (in j order), and the 16 lanes are added in a fixed tree (lanes_total). An AVX-512
   vector holds the 16 lanes, AVX2 two vectors of 8, the baseline four SSE vectors or scalars. */
#define SUM_LANES 16

/* for (j = 0; j < n; ++j) body (the arguments after n), in blocks of SUM_LANES; the body sees the
   index j and its lane l. Two blocks per step, each lane's terms still in j order, so twice as
   many independent terms are in flight (one vector of 16 would wait on each term's latency). */
#define FOR_LANES(j, n, ...)                                                                  \
    {                                                                                         \
        int64_t j0_ = 0;                                                                      \
        for (; j0_ + 2 * SUM_LANES <= (n); j0_ += 2 * SUM_LANES) {                            \
            _Pragma("omp simd")                                                               \
            for (int64_t l = 0; l < SUM_LANES; ++l) {                                         \
                { int64_t j = j0_ + l; __VA_ARGS__ }                                          \
                { int64_t j = j0_ + SUM_LANES + l; __VA_ARGS__ }                              \
            }                                                                                 \
        }                                                                                     \
        for (; j0_ < (n); j0_ += SUM_LANES) {                                                 \
            if ((n) - j0_ >= SUM_LANES) {                                                     \
                _Pragma("omp simd")                                                           \
                for (int64_t l = 0; l < SUM_LANES; ++l) { int64_t j = j0_ + l; __VA_ARGS__ }  \
            } else {                                                                          \
                for (int64_t l = 0; l < (n) - j0_; ++l) { int64_t j = j0_ + l; __VA_ARGS__ }  \
            }                                                                                 \
        }                                                                                     \
    }

/* The sum of the lanes: lane l + lane l + 8, then + 4, + 2, + 1 (a vector's halves added in turn). */
INLINE float lanes_total(float *lane) {
    for (int w = SUM_LANES / 2; w >= 1; w /= 2)
        for (int l = 0; l < w; ++l) lane[l] += lane[l + w];
    return lane[0];
}

INLINE uint32_t bits_of(float x) { uint32_t b; memcpy(&b, &x, 4); return b; }
INLINE float float_of(uint32_t b) { float x; memcpy(&x, &b, 4); return x; }

/* The fp32 value of fp16 bits h: the 15 magnitude bits moved into place read as an fp32 that is
   2^-112 times the value (subnormals included), so one exact scaling finishes the job. */
INLINE float fp16_value(uint16_t h) {
    uint32_t magnitude = (uint32_t)(h & 0x7FFFu) << 13;
    float value = float_of(magnitude) * 5.192296858534828e+33f;  /* 2^112 */
    uint32_t special = (h & 0x7C00u) == 0x7C00u ? 0x7F800000u | magnitude : bits_of(value);
    return float_of(((uint32_t)(h & 0x8000u) << 16) | special);
}

#endif
