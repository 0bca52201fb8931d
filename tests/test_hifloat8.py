"""HiFloat8: the decoding of every code and the CAST_ROUND from fp32, against the bit-level
references of tests/golden/hifloat8.py."""

import numpy as np
import pytest

from aclnn_emu.kernels.casts import HIF8_VALUES, cast_round_hif8, hif8_to_float32
from golden.hifloat8 import decode, reference_round


def test_known_values():
    assert HIF8_VALUES[0x00] == 0 and np.isnan(HIF8_VALUES[0x80])
    assert HIF8_VALUES[0x6F] == np.inf and HIF8_VALUES[0xEF] == -np.inf
    assert HIF8_VALUES[0x6E] == 32768 and HIF8_VALUES[0xEE] == -32768
    assert HIF8_VALUES[0x01] == 2.0**-22 and HIF8_VALUES[0x07] == 2.0**-16
    assert HIF8_VALUES[0x08] == 1.0 and HIF8_VALUES[0x0E] == 1.75  # dot 0001: 1.mmm
    assert HIF8_VALUES[0x10] == 2.0 and HIF8_VALUES[0x18] == 0.5  # dot 001: exponent ±1
    assert HIF8_VALUES[0x7E] == 2.0**-15 and HIF8_VALUES[0x41] == 16 * 1.25  # dot 11 / dot 10


def test_decoding_matches_the_field_reference():
    expected = np.array([decode(c) for c in range(256)], np.float32)
    assert np.array_equal(HIF8_VALUES, expected, equal_nan=True)


def test_every_code_decodes_and_encodes_to_itself():
    codes = np.arange(256, dtype=np.uint8)
    assert (cast_round_hif8(hif8_to_float32(codes)) == codes).all()
    finite = np.isfinite(HIF8_VALUES)
    assert len(np.unique(HIF8_VALUES[finite])) == finite.sum()  # no two codes share a value


def test_midpoints_round_away_and_just_below_round_down():
    grid = np.unique(HIF8_VALUES[np.isfinite(HIF8_VALUES) & (HIF8_VALUES >= 0)].astype(np.float64))
    lo, hi = grid[:-1], grid[1:]
    mid = ((lo + hi) / 2).astype(np.float32)
    assert (mid.astype(np.float64) == (lo + hi) / 2).all()  # midpoints are fp32 values
    assert (hif8_to_float32(cast_round_hif8(mid)) == hi).all()
    assert (hif8_to_float32(cast_round_hif8(-mid)) == -hi).all()
    below = np.nextafter(mid, np.float32(0))
    assert (hif8_to_float32(cast_round_hif8(below)) == lo).all()


def test_saturation_underflow_and_specials():
    got = cast_round_hif8(
        np.array([40000, -1e30, 49152, 2.0**-24, -(2.0**-23), -0.0, np.inf, -np.inf, np.nan], np.float32)
    )
    assert got.tolist() == [0x6E, 0xEE, 0x6E, 0x00, 0x81, 0x00, 0x6F, 0xEF, 0x80]


@pytest.mark.parametrize("scale", [1e-7, 1e-3, 1.0, 300.0, 3e4])
def test_cast_round_matches_the_bit_level_rule(scale):
    x = (np.random.default_rng(5).standard_normal(4000) * scale).astype(np.float32)
    expected = np.array([reference_round(v) for v in x], np.uint8)
    assert (cast_round_hif8(x) == expected).all()
