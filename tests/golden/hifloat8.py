"""HiFloat8 references, bit by bit: the field layout of the format paper ("Ascend HiFloat8 Format
for Deep Learning") and CANN's Hif8ToFloatCommon, and CAST_ROUND as CANN's docs state it ("half to
away": the first dropped mantissa bit decides; overflow saturates). Shares no code with aclnn_emu."""

import numpy as np

# dot field prefix -> (exponent bits, mantissa bits)
_DOTS = {"11": (4, 1), "10": (3, 2), "01": (2, 3), "001": (1, 3), "0001": (0, 3)}


def decode(code: int) -> float:
    """The value of one code, parsed as a bit string."""
    bits = f"{code:08b}"
    sign = -1.0 if bits[0] == "1" else 1.0
    rest = bits[1:]
    if code == 0x80:
        return float("nan")
    if rest == "1101111":
        return sign * float("inf")
    if rest.startswith("0000"):
        m = int(rest[4:], 2)
        return 0.0 if m == 0 else sign * 2.0 ** (m - 23)
    dot = next(d for d in _DOTS if rest.startswith(d))
    exp_bits, man_bits = _DOTS[dot]
    field, mantissa = rest[len(dot) : len(dot) + exp_bits], rest[len(dot) + exp_bits :]
    assert len(mantissa) == man_bits
    exponent = 0
    if exp_bits:
        exponent = int("1" + field[1:], 2) * (-1 if field[0] == "1" else 1)
    return sign * (1 + int(mantissa, 2) / 2**man_bits) * 2.0**exponent


def reference_round(x: float) -> int:
    """fp32 -> HiFloat8 code, bit by bit: exponent e of x picks the mantissa width (|e| <= 3: 3 bits,
    <= 7: 2, <= 15: 1, else 0), the mantissa is rounded half away, the carry may raise e; then the
    dot field and the sign-magnitude exponent are packed. Saturates at 2^15."""
    bits = int(np.float32(x).view(np.uint32))
    sign, magnitude = bits >> 31, bits & 0x7FFFFFFF
    if magnitude == 0:
        return 0
    e = (magnitude >> 23) - 127
    if e < -23:
        return 0
    width = 3 if abs(e) <= 3 else 2 if abs(e) <= 7 else 1 if abs(e) <= 15 else 0
    drop = 23 - width
    rounded = ((magnitude >> drop) + ((magnitude >> (drop - 1)) & 1)) << drop  # half away
    e = (rounded >> 23) - 127
    if e > 15:
        return 0x6E | sign << 7
    if e < -15:  # denormal: 2^(m - 23), m in 1..7
        return (max(e, -22) + 23) | sign << 7
    if e == 15 and rounded & 0x7FFFFF:  # 1.5 x 2^15 is the Inf code: saturate
        return 0x6E | sign << 7
    width = 3 if abs(e) <= 3 else 2 if abs(e) <= 7 else 1
    mantissa = (rounded >> (23 - width)) & ((1 << width) - 1)
    if e == 0:
        head = 0b0001 << 3
    elif abs(e) == 1:
        head = 0b001 << 4 | (e < 0) << 3
    else:
        exp_bits = {3: 2, 2: 3, 1: 4}[width]
        dot = {2: 0b01, 3: 0b10, 4: 0b11}[exp_bits]
        field = (abs(e) - (1 << (exp_bits - 1))) | (e < 0) << (exp_bits - 1)
        head = dot << 5 | field << width
    return head | mantissa | sign << 7


def cast_round_mean(window: np.ndarray, divisor: int, dtype=None) -> np.ndarray:
    """A Rope window of HiFloat8 codes [tokens, head]: fp32 sum in token order, / divisor in fp32,
    CAST_ROUND back to codes."""
    total = np.zeros(window.shape[1], np.float32)
    for row in window:
        total = (total + np.array([decode(c) for c in row], np.float32)).astype(np.float32)
    return np.array([reference_round(v) for v in total / np.float32(divisor)], np.uint8)
