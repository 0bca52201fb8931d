"""CANN's precision standard for the numerical tests, in one place.

"Double thousandth" (msprobe's api_precision_threshold, the AscendOpTest defaults): an element
passes when its relative error is within the dtype's bound (fp16 1e-3, bf16 4e-3, fp32 1e-4);
elements whose golden value is tiny (|golden| <= 1e-3, the small-value region) are judged by
absolute error 1e-5 instead. A tensor passes when at least 99.9 % of its elements do.

Attention backward ops sum rounded (fp16/bf16) P and dS over long rows, so gradients that cancel
to near zero move by far more than 1e-3 of themselves when one rounding lands on the other side of
a midpoint. Tests of such outputs pass `floor`, a scale (one for the tensor, e.g. its mean
magnitude, or one per element, e.g. the largest term of its sum) below which an element is judged
by absolute error bound·floor: a small-value region scaled to the data.
"""
import numpy as np

RTOL = {"float16": 1e-3, "bfloat16": 4e-3, "float32": 1e-4}
SMALL, ATOL = 1e-3, 1e-5
PASS_SHARE = 0.999


def rtol(dtype) -> float:
    """The relative bound for a dtype (np.dtype, ml_dtypes type or its name)."""
    return RTOL[dtype if isinstance(dtype, str) else np.dtype(dtype).name]


def passing(actual, golden, dtype, bound: float | None = None, floor=None) -> np.ndarray:
    """Elementwise: does each element meet the bound? (NaN never does, unless both are NaN.)
    `bound` replaces the dtype's relative bound where a test documents why it needs another;
    `floor` (a scalar or per element) also accepts errors within bound·floor (see the module
    docstring)."""
    a = np.asarray(actual, np.float64)
    g = np.asarray(golden, np.float64)
    err = np.abs(a - g)
    bound = bound or rtol(dtype)
    ok = np.where(np.abs(g) <= SMALL, err <= ATOL, err <= bound * np.abs(g))
    if floor is not None:
        ok |= err <= bound * np.asarray(floor, np.float64)
    return ok | (np.isnan(a) & np.isnan(g)) | (a == g)


def pass_ratio(actual, golden, dtype) -> float:
    ok = passing(actual, golden, dtype)
    return float(ok.mean()) if ok.size else 1.0


def failure(actual, golden, dtype, share: float = PASS_SHARE, bound: float | None = None,
            floor=None) -> str | None:
    """None when `actual` meets the standard against `golden`, else what went wrong."""
    a, g = np.asarray(actual, np.float64), np.asarray(golden, np.float64)
    if a.shape != g.shape:
        return f"shape {a.shape} != golden {g.shape}"
    ok = passing(a, g, dtype, bound, floor)
    if ok.size == 0 or ok.mean() >= share:
        return None
    err = np.where(ok, 0.0, np.abs(a - g) / np.maximum(np.abs(g), SMALL))
    worst = np.unravel_index(np.argmax(np.nan_to_num(err, nan=np.inf)), err.shape)
    return (f"{ok.mean():.4%} of elements within {bound or rtol(dtype)} (need {share:.1%}); worst at {worst}: "
            f"got {a[worst]!r}, golden {g[worst]!r}")


def assert_meets(actual, golden, dtype, what: str = "") -> None:
    message = failure(actual, golden, dtype)
    assert message is None, f"{what}: {message}"
