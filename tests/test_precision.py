"""The strict reading of CANN's standard in tests/precision.py: what the 0.1 % may and may not hide."""

import numpy as np

import precision


def golden(n=6144, seed=0):
    return np.random.default_rng(seed).standard_normal(n) + 3.0


def test_a_tensor_within_the_bound_passes():
    g = golden()
    assert precision.failure(g * (1 + 5e-4), g, "float16") is None


def test_a_few_elements_slightly_out_pass_within_the_share():
    g = golden()
    a = g.copy()
    a[:6] *= 1 + 3e-3  # 6 of 6144 (<= 0.1 %), 3x the bound
    assert precision.failure(a, g, "float16") is None
    a[:7] *= 1 + 3e-3
    assert "7 of 6144" in precision.failure(a, g, "float16")


def test_one_nan_or_inf_where_the_golden_is_finite_fails():
    g = golden()
    for bad in (np.nan, np.inf):
        a = g.copy()
        a[100] = bad
        assert "finite on one side only" in precision.failure(a, g, "float16")


def test_non_finite_goldens_must_be_matched():
    g = golden()
    g[3], g[4] = np.inf, np.nan
    a = g.copy()
    assert precision.failure(a, g, "float16") is None
    a[3] = 65504.0
    assert "finite on one side only" in precision.failure(a, g, "float16")


def test_an_outlier_far_out_fails_even_alone():
    g = golden()
    a = g.copy()
    a[7] = 0.0  # a zeroed element: out by its own size
    assert "more than 10 x" in precision.failure(a, g, "float16")
    a[7] = g[7] * (1 + 9e-3)  # 9x the bound: within the cap
    assert precision.failure(a, g, "float16") is None


def test_small_tensors_allow_no_element_out():
    g = golden(999)
    a = g.copy()
    a[0] *= 1 + 2e-3
    assert "allowed 0" in precision.failure(a, g, "float16")
    g, a = golden(1000), golden(1000)
    a[0] *= 1 + 2e-3
    assert precision.failure(a, g, "float16") is None  # 1000 elements: one may be out


def test_per_element_floors_widen_the_bound_where_given():
    g = np.array([1e-2, 5.0] * 600)
    a = g + 1e-3  # 10 % of the small elements
    floor = np.where(g < 1, 2.0, 0.0)  # their sums' largest terms: 2.0, so 1e-3 * 2.0 allowed
    assert precision.failure(a, g, "float16", floor=floor) is None
    assert precision.failure(a, g, "float16") is not None
