"""Rounding-mode tie tests: inputs whose rounded intermediates land exactly on fp16/bf16 (or FP8
E4M3) midpoints.

A kernel's numerical tests cannot tell round-half-away from round-half-even: random data hits an
exact midpoint almost never, and when it does the difference is one ulp of one intermediate. So
each rounded quantity of each kernel gets a case built on coarse grids, where every fp32 operation
the kernel does is exact except the roundings under test, and where the exact values of the rounded
quantity have one significant bit more than the narrow format: then about half of them are ties.

Such a case has a float64 golden with one rounding mode per rounded quantity (`MODES`: "away" =
CAST_ROUND, "even" = CAST_RINT or a plain conversion, None = kept exact), so the test asserts
1. bit equality of the kernel's outputs with the golden in the hardware's modes, and
2. `assert_sensitive`: for every quantity, each other mode changes at least one output bit, so
   the test can fail for each wrong choice (a case without ties there would pass anything).

Helpers for new operators: `round_to`, `one_more_bit` (values that are ties half the time),
`midpoints`, `reciprocal_ties`, `exp_ties`, `dot_terms` and `two_key_output` (forward kernels'
P = exp(S - max)),
`is_tie`, `to_output`, `assert_bits`, `assert_sensitive`.
"""

import itertools

import ml_dtypes
import numpy as np

FORMATS = {
    "float16": (11, -14, 65504.0),
    "bfloat16": (8, -126, float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)),
    "float8_e4m3fn": (4, -6, 448.0),
}
MODES = ("away", "even", None)


def name_of(dtype) -> str:
    return dtype if isinstance(dtype, str) else np.dtype(dtype).name


def round_to(x, dtype, mode):
    """float64 x rounded to fp16/bf16 values (kept in float64), or to int8 (integers, saturated):
    "away" ties away from zero, "even" ties to even, None leaves x as it is. Overflow gives inf."""
    if mode is None:
        return np.asarray(x, np.float64)
    x = np.asarray(x, np.float64)
    quantised = name_of(dtype) == "int8"
    if quantised:
        ulp, largest = np.ones_like(x), np.inf
    else:
        digits, emin, largest = FORMATS[name_of(dtype)]
        _, exponent = np.frexp(x)
        ulp = np.ldexp(1.0, np.maximum(exponent - 1, emin) - (digits - 1))
    steps = np.abs(x) / ulp  # exact: a power-of-two scaling
    if mode == "away":
        whole = np.floor(steps + 0.5)
    elif mode == "even":
        whole = np.rint(steps)
    else:
        raise ValueError(f"rounding mode {mode!r}")
    rounded = np.copysign(whole * ulp, x)
    if quantised:
        return np.clip(rounded, -128, 127)
    return np.where(np.abs(rounded) > largest, np.copysign(np.inf, x), np.where(np.isfinite(x), rounded, x))


def to_output(x, dtype, mode):
    """The final narrowing of a kernel's result: without a rounding step of its own (None) an output
    still gets a plain conversion, ties to even."""
    return round_to(x, dtype, mode or "even")


def is_tie(x, dtype) -> np.ndarray:
    """Which float64 values lie exactly halfway between two neighbours whose rounding modes differ."""
    return round_to(x, dtype, "away") != round_to(x, dtype, "even")


def one_more_bit(rng, shape, dtype, low=1, high=2):
    """float64 values with one significant bit more than ``dtype`` (about half of them ties between
    neighbours of differing parity), magnitudes in [low, high) for a power-of-two range, random signs."""
    digits = FORMATS[name_of(dtype)][0]
    exponent = rng.integers(int(np.log2(low)), int(np.log2(high)), shape)
    mantissa = rng.integers(2**digits, 2 ** (digits + 1), shape)  # digits + 1 significant bits
    return np.ldexp(mantissa.astype(np.float64), exponent - digits) * rng.choice([-1.0, 1.0], shape)


def midpoints(rng, shape, dtype, low=1, high=2):
    """float64 ties only (rounding away and to even differ), magnitudes in [low, high), random signs."""
    digits = FORMATS[name_of(dtype)][0]
    exponent = rng.integers(int(np.log2(low)), int(np.log2(high)), shape)
    even = 2 * rng.integers(2 ** (digits - 2), 2 ** (digits - 1), shape)  # an even lower neighbour
    mantissa = 2 * even + 1  # halfway to the next
    return np.ldexp(mantissa.astype(np.float64), exponent - digits) * rng.choice([-1.0, 1.0], shape)


def reciprocal_ties(rng, dtype, shape) -> np.ndarray:
    """float32 softmax sums l whose fp32 reciprocals 1/l are ``dtype`` midpoints in [1/4, 1) (about
    half of them) or 1, 1/2, 1/4: for attention backward kernels, which recompute P = exp(S - max)/l,
    with S equal to max (exp(0) = 1), so that P is one correctly rounded fp32 division."""
    size = int(np.prod(shape))
    wanted = np.abs(midpoints(rng, 4 * size, dtype, 0.25, 1))
    sums = (1 / wanted).astype(np.float32)
    sums = sums[(np.float32(1) / sums).astype(np.float64) == wanted][:size]  # the division lands back
    assert len(sums) == size, "too few reciprocals land on midpoints"
    powers = rng.choice(np.array([1, 2, 4], np.float32), shape)
    return np.where(rng.random(shape) < 0.5, sums.reshape(shape), powers)


def exp_ties(rng, dtype, count):
    """(y, e): ``count`` float32 scores y < 0 whose float32 exponentials e = fp32(exp(y)) are
    ``dtype`` midpoints in [1/2, 1), for attention forward kernels, whose P = exp(S - max) with the
    max at 0. Each e lies within 0.1 of an fp32 ulp of exp(y), so any exp good to 0.4 ulp returns it,
    and numpy's float32 exp (not correctly rounded: 1 ulp off near some of them) returns it too."""
    wanted = np.abs(midpoints(rng, 64 * count, dtype, 0.5, 1))
    near = np.log(wanted).astype(np.float32)
    y = np.concatenate([near + np.float32(s) * np.spacing(near) for s in (-1, 0, 1)])
    exact = np.exp(y.astype(np.float64))
    e = exact.astype(np.float32).astype(np.float64)
    good = (
        (e == np.tile(wanted, 3))
        & (np.abs(exact - e) < 0.1 * np.spacing(e.astype(np.float32)))
        & (y < 0)
        & (np.exp(y) == e)
    )
    y, keep = np.unique(y[good], return_index=True)
    assert len(y) >= count, "too few exponentials land on midpoints"
    return y[:count], e[good][keep][:count]


def dot_terms(y, dtype, width: int):
    """(q [n, width], k [width]) in ``dtype`` with q . k == y exactly in fp32 in any summation order:
    y's 24 bits cut into three pieces of the dtype's precision, k = (1, 2**-digits, 2**-2digits, 0...)."""
    digits = FORMATS[name_of(dtype)][0]
    rest, pieces = np.asarray(y, np.float64), []
    for i in range(3):
        scaled = rest * 2.0 ** (digits * i)
        mantissa, exponent = np.frexp(scaled)
        piece = np.ldexp(np.trunc(np.ldexp(mantissa, digits)), exponent - digits)
        pieces.append(piece)
        rest = rest - piece * 2.0 ** (-digits * i)
    assert not rest.any(), "y does not fit in three pieces"
    q = np.zeros((len(y), width))
    q[:, :3] = np.stack(pieces, axis=1)
    k = np.zeros(width)
    k[:3] = 2.0 ** (-digits * np.arange(3))
    assert np.array_equal(q.astype(dtype).astype(np.float64), q), "a piece is not on the dtype's grid"
    return q.astype(dtype), k.astype(dtype)


def two_key_output(e, dtype, p_mode, out_mode):
    """A forward kernel's output for the two keys of an `exp_ties` row: scores (0, y), so
    P = (1, round(e)) and the sum l = 1 + e (exact in fp32), values (0, 1): O = fp32(P_1 / l),
    narrowed in ``out_mode``."""
    o = np.float32(round_to(e, dtype, p_mode)) / np.float32(1 + e)
    return round_to(o.astype(np.float64), dtype, out_mode)


def bits(x) -> np.ndarray:
    x = np.ascontiguousarray(x)
    return x.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[x.itemsize])


def assert_bits(actual, expected, what=""):
    """actual (an fp16/bf16/fp32/int array) bit for bit equal to expected (float64 values that the
    dtype holds exactly, converted here)."""
    actual = np.asarray(actual)
    want = np.asarray(expected, np.float64).astype(actual.dtype)
    assert np.array_equal(np.asarray(expected, np.float64), want.astype(np.float64), equal_nan=True), (
        f"{what}: the golden is not on the {actual.dtype} grid"
    )
    differ = bits(actual) != bits(want)
    if differ.any():
        first = tuple(int(i) for i in np.argwhere(differ)[0])
        raise AssertionError(
            f"{what}: {int(differ.sum())} of {actual.size} elements differ in their bits; "
            f"first at {first}: got {actual[first]!r}, hardware rounding gives {want[first]!r}"
        )


def assert_sensitive(golden, modes: dict, what="", finals=()):
    """For each rounded quantity of ``modes`` (name -> the hardware's mode), every other mode of
    MODES changes some output bit of ``golden(modes) -> dict of float64 arrays``: the case has ties
    where it matters. ``finals`` name the final narrowings (`to_output`), for which no rounding is
    a plain conversion. Returns the golden in the hardware's modes."""
    want = golden(modes)
    for quantity, other in itertools.product(modes, MODES):
        if (other or "even" if quantity in finals else other) == modes[quantity]:
            continue
        got = golden(dict(modes, **{quantity: other}))
        assert any(not np.array_equal(got[k], want[k], equal_nan=True) for k in want), (
            f"{what}: rounding {quantity} {other!r} instead of {modes[quantity]!r} changes no output bit"
        )
    return want
