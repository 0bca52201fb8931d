"""aclFloat16ToFloat, aclFloatToFloat16 and aclDataTypeSize are C in the shim: checked bit for bit
against an independent numpy model, over all 65536 half values and a float sweep (every half, the
ties between neighbours and their neighbours, subnormals, overflow, infinities, NaNs, random bits),
through a compiled C program and through ctypes."""

import numpy as np
import pytest

import cabi
from aclnn_emu import dtypes
from golden.half import model_half_to_float

ALL_HALVES = np.arange(65536, dtype=np.uint32)


def model_float_to_half(values: np.ndarray) -> np.ndarray:
    """numpy's round-to-nearest-even conversion, with NaN, Inf and overflow saturated to +-65504."""
    with np.errstate(over="ignore", invalid="ignore"):
        half = values.astype(np.float16)
    saturated = np.where(np.signbit(values), 0xFBFF, 0x7BFF).astype(np.uint16)
    return np.where(np.isfinite(half), half.view(np.uint16), saturated)


def float_sweep() -> np.ndarray:
    finite = np.arange(0x7C00, dtype=np.uint16).view(np.float16).astype(np.float64)
    ties = (finite[:-1] + finite[1:]) / 2  # exactly between two halves: float32 holds it
    points = np.concatenate([finite, ties, [65504.0 + 8, 65504.0 + 16, 65536.0, 2.0**-25, 1.5 * 2.0**-25]])
    points = points.astype(np.float32)
    bits = points.view(np.uint32)
    around = np.concatenate([bits, bits + 1, bits - 1]).view(np.float32)
    specials = np.array([np.inf, np.nan, 3.4028235e38, 1e-45, 1.17549435e-38, 1e-38], np.float32)
    nans = np.array([0x7F800001, 0x7FC00000, 0x7FFFFFFF, 0x7FA5A5A5], np.uint32).view(np.float32)
    random = np.random.default_rng(7).integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    everything = np.concatenate([around, specials, nans, random])
    return np.concatenate([everything, -everything])  # both signs (-0.0 and NaNs with the sign bit too)


def expected_sizes() -> np.ndarray:
    return np.array([dtypes.SIZE.get(dtypes.coerce(dt), 0) for dt in range(-8, 64)], np.uint64)


def test_model_agrees_with_numpy_on_finite_halves():
    finite = ALL_HALVES[((ALL_HALVES >> 10) & 0x1F) != 31]
    assert np.array_equal(
        model_half_to_float(finite).view(np.uint32),
        finite.astype(np.uint16).view(np.float16).astype(np.float32).view(np.uint32),
    )


def test_compiled_program_matches_the_model(tmp_path):
    inputs = float_sweep()
    (tmp_path / "in.bin").write_bytes(inputs.tobytes())
    result = cabi.compile_and_run("pure_helpers.cpp", tmp_path / "in.bin", tmp_path / "out.bin", timeout=120)
    assert result.returncode == 0, result.stderr
    out = (tmp_path / "out.bin").read_bytes()
    widened = np.frombuffer(out, np.uint32, 65536)
    narrowed = np.frombuffer(out, np.uint16, inputs.size, offset=65536 * 4)
    sizes = np.frombuffer(out, np.uint64, offset=65536 * 4 + inputs.size * 2)
    assert np.array_equal(widened, model_half_to_float(ALL_HALVES).view(np.uint32))
    assert np.array_equal(narrowed, model_float_to_half(inputs))
    assert np.array_equal(sizes, expected_sizes())


def test_ctypes_matches_the_model(libacl):
    widened = np.array([libacl.aclFloat16ToFloat(int(h)) for h in ALL_HALVES], np.float32)
    assert np.array_equal(widened.view(np.uint32), model_half_to_float(ALL_HALVES).view(np.uint32))
    inputs = float_sweep()[::8]
    narrowed = np.array([libacl.aclFloatToFloat16(float(x)) for x in inputs], np.uint16)
    assert np.array_equal(narrowed, model_float_to_half(inputs))
    assert [libacl.aclDataTypeSize(dt) for dt in range(-8, 64)] == expected_sizes().tolist()


@pytest.mark.parametrize(
    "value, bits",
    [
        (1.0, 0x3C00),
        (1 + 2**-11, 0x3C00),
        (1 + 3 * 2**-11, 0x3C02),
        (65519.0, 0x7BFF),
        (65520.0, 0x7BFF),
        (-1e6, 0xFBFF),
        (-0.0, 0x8000),
        (2**-24, 0x0001),
        (2**-25, 0x0000),
        (-float("nan"), 0xFBFF),
    ],
)
def test_known_conversions(libacl, value, bits):
    assert libacl.aclFloatToFloat16(value) == bits
