/* The fp32 FMA peak of one core at the vector width it is compiled for (-march=x86-64-v3: AVX2;
 * x86-64-v4 with 512-bit vectors: AVX-512): 12 independent chains of vector fused multiply-adds,
 * more than the FMA units' latency times their throughput needs, so nothing but the units limits
 * them. No fp32 matmul can run faster on this core. Prints the rate in GFLOP/s. */
#include <stdio.h>
#include <time.h>

#ifndef VECTOR_BYTES
#define VECTOR_BYTES 32
#endif
#define LANES (VECTOR_BYTES / 4)
#define CHAINS 12

typedef float vec __attribute__((vector_size(VECTOR_BYTES)));

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
    vec acc[CHAINS], x, y;
    for (int i = 0; i < LANES; ++i) x[i] = 0.999999f, y[i] = 1e-7f;
    for (int c = 0; c < CHAINS; ++c)
        for (int i = 0; i < LANES; ++i) acc[c][i] = (float)c;
    long steps = 0;
    double start = now(), elapsed;
    do {                                                    /* rounds of 10^7 steps, for 0.3 s */
        for (long s = 0; s < 10000000; ++s)
#pragma GCC unroll 12
            for (int c = 0; c < CHAINS; ++c) acc[c] = acc[c] * x + y;   /* one FMA (-ffp-contract=fast) */
        steps += 10000000;
    } while ((elapsed = now() - start) < 0.3);
    float sum = 0;                                          /* used, so the chains are computed */
    for (int c = 0; c < CHAINS; ++c) sum += acc[c][0];
    printf("%.1f %g\n", 2.0 * LANES * CHAINS * steps / elapsed / 1e9, sum);
    return 0;
}
