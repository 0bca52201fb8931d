"""The tie helpers (tests/ties.py) against independent roundings: numpy's casts (ties to even) and
a bit-level CAST_ROUND."""

import ml_dtypes
import numpy as np
import pytest

import ties

DTYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}


def away_by_bits(x32, name):
    """CAST_ROUND of fp32 values by their bits: add half of the dropped part to the magnitude."""
    drop = 13 if name == "float16" else 16
    bits = x32.view(np.uint32)
    rounded = ((bits + np.uint32(1 << (drop - 1))) & ~np.uint32((1 << drop) - 1)).view(np.float32)
    return rounded.astype(np.float64)


@pytest.mark.parametrize("name", DTYPES)
def test_round_to_matches_the_casts(name):
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [ties.one_more_bit(rng, 4000, name, 0.25, 8), rng.standard_normal(4000).astype(np.float32).astype(np.float64)]
    )
    even = x.astype(np.float32).astype(DTYPES[name]).astype(np.float64)
    assert np.array_equal(ties.round_to(x, name, "even"), even)
    assert np.array_equal(ties.round_to(x, name, "away"), away_by_bits(x.astype(np.float32), name))
    assert np.array_equal(ties.round_to(x, name, None), x)


@pytest.mark.parametrize("name", DTYPES)
def test_midpoints_are_ties_and_one_more_bit_gives_many(name):
    rng = np.random.default_rng(1)
    assert ties.is_tie(ties.midpoints(rng, 1000, name), name).all()
    share = ties.is_tie(ties.one_more_bit(rng, 4000, name), name).mean()
    assert 0.2 < share < 0.3  # half are midpoints, half of those between differing modes


def test_int8_rounding_saturates_and_ties():
    assert list(ties.round_to([100.5, 101.5, -2.5, 300.0, -300.0], "int8", "even")) == [100, 102, -2, 127, -128]
    assert list(ties.round_to([100.5, -2.5], "int8", "away")) == [101, -3]


def test_reciprocal_ties_divide_back_onto_midpoints():
    sums = ties.reciprocal_ties(np.random.default_rng(2), "float16", (64, 8))
    p = (np.float32(1) / sums).astype(np.float64)
    assert ties.is_tie(p, "float16").sum() > 64 and np.isin(p[~ties.is_tie(p, "float16")], [1, 0.5, 0.25]).all()


def test_a_case_without_ties_is_reported():
    with pytest.raises(AssertionError, match="changes no output bit"):
        ties.assert_sensitive(lambda m: {"out": ties.round_to(np.array([1.0, 2.0]), "float16", m["x"])}, {"x": "away"})
