/* aclnn-emu: op::fp16_t, the IEEE half-precision value type of the opdev headers (host side). */
#ifndef OP_API_OP_API_COMMON_INC_OPDEV_FP16_T_H
#define OP_API_OP_API_COMMON_INC_OPDEV_FP16_T_H

#include <cstdint>
#include <cstring>

namespace op {

struct fp16_t {
    uint16_t val;

    fp16_t() : val(0) {}
    fp16_t(int value) : val(FromFloat(static_cast<float>(value))) {}
    fp16_t(float value) : val(FromFloat(value)) {}
    fp16_t(double value) : val(FromFloat(static_cast<float>(value))) {}

    operator float() const { return ToFloat(val); }
    operator double() const { return ToFloat(val); }
    float toFloat() const { return ToFloat(val); }

    static float ToFloat(uint16_t h) {
        uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
        uint32_t exponent = (h >> 10) & 0x1Fu;
        uint32_t mantissa = h & 0x3FFu;
        uint32_t bits;
        if (exponent == 0x1Fu) {
            bits = sign | 0x7F800000u | (mantissa << 13);
        } else if (exponent != 0) {
            bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
        } else if (mantissa == 0) {
            bits = sign;
        } else {          /* subnormal: normalise */
            exponent = 113u;
            while ((mantissa & 0x400u) == 0) {
                mantissa <<= 1;
                exponent--;
            }
            bits = sign | (exponent << 23) | ((mantissa & 0x3FFu) << 13);
        }
        float out;
        std::memcpy(&out, &bits, sizeof(out));
        return out;
    }

    /* Round to nearest, ties to even. */
    static uint16_t FromFloat(float value) {
        uint32_t bits;
        std::memcpy(&bits, &value, sizeof(bits));
        uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
        uint32_t magnitude = bits & 0x7FFFFFFFu;
        if (magnitude >= 0x7F800000u) {
            return static_cast<uint16_t>(sign | 0x7C00u | (magnitude > 0x7F800000u ? 0x200u : 0u));
        }
        if (magnitude >= 0x477FF000u) {        /* rounds to infinity */
            return static_cast<uint16_t>(sign | 0x7C00u);
        }
        if (magnitude < 0x38800000u) {         /* subnormal or zero */
            if (magnitude < 0x33000000u) {
                return sign;
            }
            uint32_t exponent = magnitude >> 23;
            uint32_t mantissa = (magnitude & 0x7FFFFFu) | 0x800000u;
            uint32_t shift = 126u - exponent;
            uint32_t half = mantissa >> shift;
            uint32_t rest = mantissa & ((1u << shift) - 1u);
            uint32_t midpoint = 1u << (shift - 1u);
            if (rest > midpoint || (rest == midpoint && (half & 1u))) {
                half++;
            }
            return static_cast<uint16_t>(sign | half);
        }
        uint32_t rounded = magnitude + 0xFFFu + ((magnitude >> 13) & 1u);
        return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
    }
};

}  // namespace op

#endif  // OP_API_OP_API_COMMON_INC_OPDEV_FP16_T_H
