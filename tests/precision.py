"""CANN's precision standard for the numerical tests, in one place.

"Double thousandth" (msprobe's api_precision_threshold, the AscendOpTest defaults): an element
passes when its relative error is within the dtype's bound (fp16 1e-3, bf16 4e-3, fp32 1e-4);
elements whose golden value is tiny (|golden| <= 1e-3, the small-value region) are judged by
absolute error 1e-5 instead. A tensor passes when at least 99.9 % of its elements do.

Attention backward ops sum rounded (fp16/bf16) P and dS over long rows, so gradients that cancel
to near zero move by far more than 1e-3 of themselves when one rounding lands on the other side of
a midpoint. Tests of such outputs pass `floor`, a scale (one for the tensor, or one per element,
e.g. the largest term of its sum) below which an element is judged by absolute error bound·floor:
a small-value region scaled to the data.

CANN's standard is written for large tensors; test tensors are small, where 0.1 % of the elements
would be a free pass for a few arbitrary values (one NaN per head, one zeroed element per kv head).
So `failure` reads it strictly:
- a non-finite result where the golden is finite always fails (and a finite one where it is not);
- the 0.1 % is a whole number of elements, rounded down: a tensor of fewer than 1000 elements
  must pass everywhere;
- an element outside its bound may be at most `CAP` times its allowed error out (see CAP).
"""

import numpy as np

RTOL = {"float16": 1e-3, "bfloat16": 4e-3, "float32": 1e-4}
SMALL, ATOL = 1e-3, 1e-5
PASS_SHARE = 0.999
# How far out (in multiples of its own allowed error) an element among the 0.1 % may be. The
# elements that legitimately miss are those where an fp32 evaluation rounds an intermediate
# (P, dS, a score) to the other side of an fp16/bf16 midpoint: that moves the element by one ulp
# of the intermediate times its factor, about 1x the bound of the term it feeds, so a few bounds
# at worst (measured over this suite's numerical tests and the FAG cases on 8 more seeds: at most
# 1.34x). 10x leaves room for that, while a wrong element (zeroed, NaN, taken from another head,
# sign flipped) is out by its own size: 1/bound = 250 to 10000 times its allowed error.
CAP = 10.0


def rtol(dtype) -> float:
    """The relative bound for a dtype (np.dtype, ml_dtypes type or its name)."""
    return RTOL[dtype if isinstance(dtype, str) else np.dtype(dtype).name]


def excess(actual, golden, dtype, bound: float | None = None, floor=None) -> np.ndarray:
    """Elementwise: the error as a multiple of what the element is allowed (<= 1 passes): bound·|golden|,
    ATOL in the small-value region, or bound·floor where that is larger (`floor`: a scalar or per
    element, see the module docstring). 0 where both are equal or both NaN; inf where one is
    non-finite and the other is not. `bound` replaces the dtype's relative bound where a test
    documents why it needs another."""
    a = np.asarray(actual, np.float64)
    g = np.asarray(golden, np.float64)
    bound = bound or rtol(dtype)
    allowed = np.where(np.abs(g) <= SMALL, ATOL, bound * np.abs(g))
    if floor is not None:
        allowed = np.maximum(allowed, bound * np.asarray(floor, np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.abs(a - g) / allowed
    same = (a == g) | (np.isnan(a) & np.isnan(g))
    ratio = np.where(np.isfinite(a) != np.isfinite(g), np.inf, ratio)
    return np.where(same, 0.0, np.nan_to_num(ratio, nan=np.inf))


def passing(actual, golden, dtype, bound: float | None = None, floor=None) -> np.ndarray:
    """Elementwise: does each element meet the bound? (NaN never does, unless both are NaN.)"""
    return excess(actual, golden, dtype, bound, floor) <= 1


def failure(actual, golden, dtype, share: float = PASS_SHARE, bound: float | None = None, floor=None) -> str | None:
    """None when `actual` meets the standard against `golden` (read strictly, see the module
    docstring), else what went wrong."""
    a, g = np.asarray(actual, np.float64), np.asarray(golden, np.float64)
    if a.shape != g.shape:
        return f"shape {a.shape} != golden {g.shape}"
    if a.size == 0:
        return None
    out = excess(a, g, dtype, bound, floor)
    misses = int(np.count_nonzero(out > 1))
    allowance = int(np.floor(a.size * (1 - share) + 1e-9))
    worst = np.unravel_index(np.argmax(out), out.shape)
    where = f"worst at {worst}: got {a[worst]!r}, golden {g[worst]!r} ({out[worst]:.3g} x its allowed error)"
    wrong_kind = np.isfinite(a) != np.isfinite(g)
    if wrong_kind.any():
        first = tuple(int(i) for i in np.argwhere(wrong_kind)[0])
        return (
            f"{int(wrong_kind.sum())} element(s) finite on one side only; first at {first}: "
            f"got {a[first]!r}, golden {g[first]!r}"
        )
    if misses > allowance:
        return f"{misses} of {a.size} elements outside {bound or rtol(dtype)} (allowed {allowance}); {where}"
    if out[worst] > CAP:
        return f"an element is more than {CAP:g} x its allowed error out; {where}"
    return None


def assert_meets(actual, golden, dtype, what: str = "") -> None:
    message = failure(actual, golden, dtype)
    assert message is None, f"{what}: {message}"


# Against torch.autograd of a float64 reference (no rounded intermediates): the bounds per dtype and
# the small-value floor the attention-gradient comparisons use.
TORCH_BOUND = {"float32": 1e-4, "float16": 4e-3, "bfloat16": 1.6e-2}


def torch_floor(exact) -> float:
    """The small-value floor against torch: the tensor's mean magnitude. torch's gradients have none
    of the rounded intermediates, so an element that cancels moves by the sum of all its terms'
    roundings, not by one ulp of its largest term as against the hardware golden."""
    return max(float(np.abs(exact).mean()), np.finfo(np.float64).tiny)
