"""Build aclnn_emu.kernels._native, the compiled inner loops of the kernels (aclnn_emu/kernels/native.c).

setup.py hands `ffi` to cffi's setuptools integration (`cffi_modules`), so `pip install .` and
`pip install -e .` compile it like any other extension module.
"""
import pathlib
import platform

import cffi

SOURCE = pathlib.Path(__file__).resolve().parent.parent / "kernels" / "native.c"
DECLARATIONS = """
void aclemu_scale_scores(float *x, int64_t n, float pre, int fp16, float post);
void aclemu_softmax_block(float *s, int64_t rows, int64_t cols, float pre, int fp16, float post,
                          float *row_max, float *row_sum, float *alpha, int rounding);
void aclemu_softmax_probs(float *s, int64_t rows, int64_t cols, const float *row_max, const float *row_sum,
                          int64_t lanes, int64_t lane0);
void aclemu_round_product(float *dst, const float *a, const float *b, int64_t n, int rounding);
void aclemu_softmax_grad(float *grad, const float *probs, const float *keep, const float *dsum,
                         int64_t rows, int64_t cols, int rounding);
void aclemu_copy_pieces(char *dst, const char *src, const int64_t *dst_offset, const int64_t *src_offset,
                        int64_t pairs, int64_t pieces, int64_t piece_bytes, int64_t dst_stride,
                        int64_t src_stride);
void aclemu_widen(float *dst, const uint16_t *src, int64_t rows, int64_t cols, int64_t src_row_stride, int kind);
void aclemu_narrow_fp16(uint16_t *dst, const float *src, int64_t n);
void aclemu_decode_scores(float *scores, const float *q, int64_t heads, int64_t groups, const void *base,
                          const int64_t *offsets, int64_t head_stride, int64_t rows, int64_t d, int kind,
                          const float *scale, const float *shift);
void aclemu_decode_values(float *acc, const float *p, int64_t heads, int64_t groups, const void *base,
                          const int64_t *offsets, int64_t head_stride, int64_t rows, int64_t d, int kind,
                          const float *scale, const float *shift);
"""
# -ffp-contract=off: no multiply-adds fused beyond the explicit fmaf calls, so every target clone
# rounds identically; -fopenmp-simd: the `omp simd` reductions vectorise without linking OpenMP;
# the AVX-512 clone is worth its full vector width.
FLAGS = ["-O3", "-ffp-contract=off", "-fno-math-errno", "-fopenmp-simd"]
if platform.machine() in ("x86_64", "AMD64"):
    FLAGS.append("-mprefer-vector-width=512")

ffi = cffi.FFI()
ffi.cdef(DECLARATIONS)
ffi.set_source("aclnn_emu.kernels._native", SOURCE.read_text(), extra_compile_args=FLAGS)
