/* The pure helpers of acl_base.h, in C: programs call them once per element, and they work even
   when the emulator cannot start. Integer arithmetic only, so the caller's floating-point
   environment (rounding mode, flush-to-zero) cannot change a result. aclemu_dtype_sizes comes
   from aclnn_emu/dtypes.py (build.py). */
static inline uint32_t aclemu_float_bits(float value) {
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

/* Exponent 31 is decoded like a normal exponent, as CANN does: 0x7C00 (Inf) gives 65536, NaNs
   give 65536..131008. */
extern "C" CFFI_DLLEXPORT float aclFloat16ToFloat(aclFloat16 value) {
    uint32_t sign = (uint32_t)(value & 0x8000) << 16, exponent = (value >> 10) & 0x1F, mantissa = value & 0x3FF;
    if (exponent == 0) {   /* subnormal: mantissa * 2^-24, a normal float */
        float magnitude = (float)mantissa * 5.9604644775390625e-08f;
        return sign ? -magnitude : magnitude;
    }
    uint32_t bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
    float result;
    memcpy(&result, &bits, sizeof result);
    return result;
}

/* Round to nearest, ties to even; NaN, infinities and everything that rounds beyond 65504
   saturate to +-65504 with the sign of the input. */
extern "C" CFFI_DLLEXPORT aclFloat16 aclFloatToFloat16(float value) {
    uint32_t bits = aclemu_float_bits(value);
    uint16_t sign = (bits >> 16) & 0x8000;
    uint32_t magnitude = bits & 0x7FFFFFFF;
    if (magnitude >= 0x477FF000) return sign | 0x7BFF;   /* >= 65520 (rounds to 65536), Inf, NaN */
    if (magnitude >= 0x38800000) {                       /* normal half: >= 2^-14 */
        magnitude += 0xFFF + ((magnitude >> 13) & 1);     /* round the 13 dropped bits, ties to even */
        return sign | (uint16_t)((magnitude >> 13) - ((127 - 15) << 10));
    }
    if (magnitude <= 0x33000000) return sign;            /* <= 2^-25: rounds to zero (2^-25 is a tie to 0) */
    uint32_t exponent = magnitude >> 23, mantissa = (magnitude & 0x7FFFFF) | 0x800000;
    uint32_t shift = 126 - exponent;                      /* subnormal half: value * 2^24 = mantissa >> shift */
    uint32_t half = mantissa >> shift, rest = mantissa & ((1u << shift) - 1), tie = 1u << (shift - 1);
    half += rest > tie || (rest == tie && (half & 1));
    return sign | (uint16_t)half;
}

extern "C" CFFI_DLLEXPORT size_t aclDataTypeSize(aclDataType dataType) {
    size_t count = sizeof aclemu_dtype_sizes / sizeof aclemu_dtype_sizes[0];
    return dataType >= 0 && (size_t)dataType < count ? aclemu_dtype_sizes[dataType] : 0;
}
