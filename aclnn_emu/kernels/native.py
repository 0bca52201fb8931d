"""numpy-facing entry points of the compiled loops in native.c, matmul.c and attention_blocks.c (built by
`pip install`, aclnn_emu/shim/native.py). The constants shared with them come from native_api.h
through cffi.

The C functions work in place on raw pointers, so every wrapper first checks what it hands over:
dtype, C-contiguity and sizes. The calls release the GIL, so kernel worker threads run them in
parallel.
"""

import pathlib
import threading

import ml_dtypes
import numpy as np

from aclnn_emu import config


class _NotBuilt:
    """Stands in for the extension where it does not exist yet: the toolkit build imports the
    operators (for their signatures) before setuptools has built _native, and a source checkout
    may never have been installed. Using it says what to do."""

    def __init__(self, error: ImportError):
        self._error = error

    def __getattr__(self, name):
        raise ImportError(
            "aclnn_emu.kernels._native is not built; install the package with "
            f"`pip install .` (or `pip install -e .`): {self._error}"
        )


try:
    from aclnn_emu.kernels._native import ffi, lib

    lib.ROW_PAD, lib.aclemu_set_cache_sizes  # (missing from an extension built from older sources)
except (ImportError, AttributeError) as error:
    ffi = lib = _NotBuilt(ImportError(str(error)))
_BUILT = not isinstance(lib, _NotBuilt)


def _constant(name: str):
    """native_api.h's constant `name` (None until the extension is built, when nothing runs)."""
    return getattr(lib, name) if _BUILT else None


# The instruction-set levels of the loops, lowest first (native.c compiles each loop once per level
# on x86-64), and their numbers in native_api.h.
ISAS = ("baseline", "avx2", "avx512")
_LEVEL = {name: _constant("ISA_" + name.upper()) for name in ISAS}
_NAME = {level: name for name, level in _LEVEL.items()}


def best_isa() -> str:
    """The highest level this CPU runs."""
    return _NAME[lib.aclemu_best_isa()]


def isa() -> str:
    """The level the loops run at now."""
    return _in_use


def use_isa(name: str) -> str:
    """Run the loops at level `name` ("auto": the best the CPU has) from now on, or at the best the CPU
    has if that is lower; returns the level in use. Results are bit-identical at every level."""
    global _in_use
    _in_use = _NAME[lib.aclemu_select_isa(_LEVEL[ISAS[-1] if name == "auto" else name])]
    if name not in ("auto", _in_use):
        config.warn_once(f"ACLNN_EMU_ISA={name}: this CPU's best level is {_in_use}, which runs instead")
    return _in_use


# What the loops block for when the CPU does not say (a core of the AVX2 servers benchmarked).
FALLBACK_CACHES = (32 << 10, 512 << 10, 16 << 20)


def detected_cache_sizes() -> tuple[int, int, int]:
    """The L1 and L2 data cache sizes of a core and the L3's, as Linux reports them for CPU 0."""
    found = {}
    for index in pathlib.Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            level, kind, size = ((index / name).read_text().strip() for name in ("level", "type", "size"))
            if kind in ("Data", "Unified"):  # sizes read "32K", "1024K", "32768K"
                found[int(level)] = int(size.rstrip("KM")) << (20 if size.endswith("M") else 10)
        except (OSError, ValueError):
            continue
    l1, l2, l3 = (found.get(level) or fallback for level, fallback in zip((1, 2, 3), FALLBACK_CACHES))
    return l1, l2, l3


def cache_sizes() -> tuple[int, int, int]:
    """The cache sizes the loops block for: ACLNN_EMU_CACHE_SIZES, else the CPU's."""
    given = config.current.cache_sizes  # three sizes when set (config checks it)
    return (given[0], given[1], given[2]) if given else detected_cache_sizes()


_in_use = "baseline"
if _BUILT:
    use_isa(config.current.isa)
    lib.aclemu_set_cache_sizes(*cache_sizes()[:2])

# How results are narrowed onto a lower precision's grid (kept in fp32): None keeps fp32;
# "even" is round to nearest even (a real conversion, CAST_RINT), "away" CAST_ROUND (ties away from zero).
ROUNDING = {
    None: _constant("KEEP_FP32"),
    "fp16_even": _constant("FP16_EVEN"),
    "bf16_away": _constant("BF16_AWAY"),
    "fp16_away": _constant("FP16_AWAY"),
    "bf16_even": _constant("BF16_EVEN"),
}
_WIDENED = {np.dtype(np.float16): 0, np.dtype(ml_dtypes.bfloat16): 1}


def _floats(x: np.ndarray, what: str, size: int | None = None, written: bool = True):
    if x.dtype != np.float32 or not x.flags.c_contiguous or (written and not x.flags.writeable):
        raise ValueError(f"{what} must be a{' writeable' if written else ''} C-contiguous float32 array")
    if size is not None and x.size != size:
        raise ValueError(f"{what} has {x.size} elements, expected {size}")
    return ffi.from_buffer("float[]", x)  # (x.ctypes.data would build a ctypes object per call)


def _address(x: np.ndarray):
    """x's first element as a float pointer (from_buffer where it can: a tenth of ctypes' cost)."""
    return ffi.from_buffer("float[]", x) if x.flags.c_contiguous else ffi.cast("float *", x.ctypes.data)


def has_contiguous_rows(x: np.ndarray) -> bool:
    """x is 2-D with contiguous rows at a non-negative whole-element row stride."""
    return x.ndim == 2 and x.strides[1] == x.itemsize and x.strides[0] % x.itemsize == 0 and x.strides[0] >= 0


def widen(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``x`` as float32: into ``out`` (float32, of x's shape) when given, else into a new C-contiguous
    array. fp16 and bf16 matrices whose rows are contiguous (any row stride, in x and in out) are
    widened here, anything else by numpy."""
    kind = _WIDENED.get(x.dtype)
    if out is None:
        if kind is None or not has_contiguous_rows(x):
            return x.astype(np.float32)
        out = np.empty(x.shape, np.float32)
    elif out.dtype != np.float32 or out.shape != x.shape or not out.flags.writeable:
        raise ValueError(f"widen: out must be a writeable float32 array of shape {x.shape}")
    if kind is None or not has_contiguous_rows(x) or not has_contiguous_rows(out):
        out[...] = x
    elif out.size:
        lib.aclemu_widen(
            ffi.cast("float *", out.ctypes.data),
            ffi.cast("const uint16_t *", x.ctypes.data),
            x.shape[0],
            x.shape[1],
            x.strides[0] // x.itemsize,
            out.strides[0] // out.itemsize,
            kind,
        )
    return out


def narrow_fp16(dst: np.ndarray, src: np.ndarray) -> None:
    """dst[...] = src, fp32 to fp16 rounding to nearest even, for C-contiguous arrays of one shape."""
    if dst.dtype != np.float16 or not dst.flags.c_contiguous or not dst.flags.writeable or dst.shape != src.shape:
        raise ValueError("narrow_fp16 needs a writeable C-contiguous fp16 dst of src's shape")
    src = np.ascontiguousarray(src, dtype=np.float32)
    lib.aclemu_narrow_fp16(
        ffi.cast("uint16_t *", dst.ctypes.data), ffi.cast("const float *", src.ctypes.data), src.size
    )


def _rows(x: np.ndarray, what: str):
    """(pointer, rows, cols, row stride) of a writeable float32 array that is C-contiguous or 2-D
    with contiguous rows."""
    if x.dtype != np.float32 or not x.flags.writeable or not (x.flags.c_contiguous or has_contiguous_rows(x)):
        raise ValueError(f"{what} must be a writeable float32 array, C-contiguous or [rows, cols] with contiguous rows")
    rows, cols = (1, x.size) if x.flags.c_contiguous and x.ndim != 2 else x.shape
    ld = x.strides[0] // 4 if x.ndim == 2 and rows > 1 else cols
    return _address(x), rows, cols, ld


def scale_(x: np.ndarray, pre: float = 1.0, fp16: bool = False, post: float = 1.0) -> np.ndarray:
    """In place: x = fp16(x * pre) * post with ``fp16`` (round to nearest even, infinite from
    65520 on), else x * pre * post. x is C-contiguous or [rows, cols] with contiguous rows."""
    if x.size:
        lib.aclemu_scale_scores(*_rows(x, "x"), pre, int(fp16), post)
    return x


def softmax_block_(
    s: np.ndarray,
    row_max: np.ndarray,
    row_sum: np.ndarray,
    alpha: np.ndarray,
    *,
    pre: float = 1.0,
    fp16: bool = False,
    post: float = 1.0,
    rounding: str | None = None,
) -> None:
    """One key block [rows, cols] (with contiguous rows) of the online softmax, in place.

    Scores are first prepared as by ``scale_``. Per row: m_new = max(row_max, block max) (NaN if
    the block holds a NaN); alpha = exp(row_max - m_new); row_sum = row_sum * alpha + sum exp(S - m_new);
    S becomes exp(S - m_new) narrowed by ``rounding`` (a ROUNDING key); row_max = m_new. Rows whose
    max is -inf shift by 0, so their exponentials are 0.
    """
    if s.ndim != 2:
        raise ValueError("the score block must be 2-D")
    pointer, rows, cols, ld = _rows(s, "s")
    lib.aclemu_softmax_block(
        pointer,
        rows,
        cols,
        ld,
        pre,
        int(fp16),
        post,
        _floats(row_max, "row_max", rows),
        _floats(row_sum, "row_sum", rows),
        _floats(alpha, "alpha", rows),
        ROUNDING[rounding],
    )


def rescale_add_(acc: np.ndarray, alpha: np.ndarray, add: np.ndarray) -> None:
    """acc = acc * alpha[:, None] + add in place for [rows, cols] arrays (the online softmax's
    O = O * exp(m_old - m_new) + P V), with numpy's two roundings in one pass."""
    if acc.ndim != 2 or add.shape != acc.shape:
        raise ValueError(f"rescale_add_: add has shape {add.shape}, acc {acc.shape}")
    rows, cols = acc.shape
    lib.aclemu_rescale_add(
        _floats(acc, "acc"),
        _floats(alpha, "alpha", rows, written=False),
        _floats(add, "add", written=False),
        rows,
        cols,
    )


PANEL = _constant("PANEL")  # columns per panel of a packed right-hand operand (matmul.c)
ROW_PAD = _constant("ROW_PAD")  # floats after each row of a score block (attention_blocks.c)


class Panels:
    """A k x n float32 matrix B packed for ``matmul_panels``: ``data[p]`` holds columns
    [32p, 32p + 32) as k rows of 32 (zero past n). ``rows(k0, k1)`` is B[k0:k1] without copying."""

    def __init__(self, data: np.ndarray, n: int, k0: int = 0, k1: int | None = None):
        self.data, self.n, self.k0 = data, n, k0
        self.k = data.shape[1] - k0 if k1 is None else k1 - k0
        self.pointer = ffi.from_buffer("float[]", data) + k0 * PANEL  # data is C-contiguous

    def rows(self, k0: int, k1: int) -> "Panels":
        if not 0 <= k0 <= k1 <= self.k:
            raise ValueError(f"rows {k0}:{k1} of a B of {self.k}")
        return Panels(self.data, self.n, self.k0 + k0, self.k0 + k1)


def pack_panels(b: np.ndarray) -> Panels:
    """B = ``b`` (a float32, fp16 or bf16 [k, n] view with any non-negative strides, e.g. keys.T;
    or small integers, such as int8 keys) widened and packed once for the matmuls that read it."""
    if b.dtype.kind in "iu" and b.itemsize <= 2:  # every value exact in fp32
        b = b.astype(np.float32)
    kind = _WIDENED.get(b.dtype, 2 if b.dtype == np.float32 else None)
    if kind is None or b.ndim != 2 or min(b.strides) < 0 or any(x % b.itemsize for x in b.strides):
        raise ValueError("pack_panels: b must be a 2-D float32, fp16 or bf16 array with non-negative strides")
    k, n = b.shape
    data = np.empty((-(-n // PANEL), k, PANEL), np.float32)
    if data.size:
        lib.aclemu_pack_panels(
            _floats(data, "panels"),
            ffi.cast("const void *", b.ctypes.data),
            k,
            n,
            b.strides[0] // b.itemsize,
            b.strides[1] // b.itemsize,
            kind,
        )
    return Panels(data, n)


class KeptPanels:
    """Kᵀ and V of one KV head packed for the matmuls, kept per worker thread for its next task:
    tasks are handed out in order, so the query heads of a KV group (and the row blocks of a head)
    that reach one worker in turn pack their keys once, not once per head."""

    def __init__(self):
        self._kept: dict[int, tuple] = {}

    def get(self, key, k: np.ndarray, v: np.ndarray) -> tuple[Panels, Panels]:
        """The panels of Kᵀ = ``k``.T and V = ``v`` ([keys, d] and [keys, dv]), which ``key`` names."""
        kept = self._kept.get(threading.get_ident())
        if kept is None or kept[0] != key:
            kept = self._kept[threading.get_ident()] = (key, pack_panels(k.T), pack_panels(v))
        return kept[1], kept[2]


def matmul_panels(out: np.ndarray, a: np.ndarray, b: Panels, col0: int = 0, accumulate: bool = False) -> np.ndarray:
    """out = a @ B[:, col0:col0 + out.shape[1]], or with ``accumulate`` out += that product (the
    product's sum added as a whole, as numpy's ``out += a @ B``), for float32 a [m, k] with contiguous
    rows or columns (a transposed view, such as x.T, is read in place) and out [m, cols] with
    contiguous rows. Each element is summed in one fixed order (chains of fused multiply-adds over 32
    k steps, added in k order), the same bits at every ISA level, for any m and either layout of a
    (matmul.c)."""
    m, cols = out.shape
    transposed = a.size > 0 and not has_contiguous_rows(a) and has_contiguous_rows(a.T)
    if (
        a.dtype != np.float32
        or out.dtype != np.float32
        or not (out.size == 0 or has_contiguous_rows(out))
        or not (a.size == 0 or transposed or has_contiguous_rows(a))
    ):
        raise ValueError("matmul_panels: a and out must be float32 [rows, cols] with contiguous rows (a: or columns)")
    if a.shape != (m, b.k) or not 0 <= col0 <= col0 + cols <= b.n or not out.flags.writeable:
        raise ValueError(
            f"matmul_panels: a {a.shape} and out {out.shape} (from column {col0}) do not fit B [{b.k}, {b.n}]"
        )
    scratch = np.empty(lib.aclemu_matmul_scratch(b.k), np.float32)
    if m and cols:
        lda = (a.strides[1] if transposed else a.strides[0]) // 4
        (lib.aclemu_matmul_panels_t if transposed else lib.aclemu_matmul_panels)(
            _address(out),
            out.strides[0] // 4,
            ffi.cast("float *", a.ctypes.data) if transposed else _address(a),
            lda,
            m,
            b.k,
            b.pointer,
            b.data.strides[0] // 4,
            col0,
            cols,
            _floats(scratch, "scratch"),
            int(accumulate),
        )
    return out


_work = threading.local()


def attention_blocks(
    q: np.ndarray,
    keys: Panels,
    values: Panels,
    bounds: np.ndarray,
    row_max: np.ndarray,
    row_sum: np.ndarray,
    acc: np.ndarray,
    *,
    acc_set: bool,
    pre: float = 1.0,
    fp16: bool = False,
    post: float = 1.0,
    rounding: str | None = None,
    zero_unseen: bool = False,
) -> None:
    """The online softmax of the query rows ``q`` [rows, d] over the key blocks
    [bounds[i], bounds[i + 1]) of the packed Kᵀ ``keys`` [d, keys] and V ``values`` [keys, dv], as
    per block: scores = q @ Kᵀ[:, block]; softmax_block_(scores, row_max, row_sum, alpha, pre=pre,
    fp16=fp16, post=post, rounding=rounding); with ``zero_unseen``, scores of rows whose max is
    still -FLT_MAX set to 0; acc = acc * alpha + scores @ V[block] (the first block's product alone
    unless ``acc_set``). One compiled call, bit-identical to those steps (attention_blocks.c)."""
    bounds = np.ascontiguousarray(bounds, dtype=np.int64)
    rows, d = q.shape
    if q.dtype != np.float32 or not has_contiguous_rows(q) or keys.k != d or values.n != acc.shape[-1]:
        raise ValueError(
            f"attention_blocks: q {q.shape} (float32, contiguous rows) does not fit Kᵀ [{keys.k}, "
            f"{keys.n}] and V [{values.k}, {values.n}]"
        )
    if (
        bounds.ndim != 1
        or len(bounds) < 2
        or np.any(np.diff(bounds) <= 0)
        or bounds[0] < 0
        or bounds[-1] > min(keys.n, values.k)
    ):
        raise ValueError(
            f"attention_blocks: bounds {bounds} are not increasing key indices below {min(keys.n, values.k)}"
        )
    size = lib.aclemu_attention_work(d, values.n, int(np.diff(bounds).max()))
    work = getattr(_work, "buffer", None)
    if work is None or work.size < size:
        work = _work.buffer = np.empty(size, np.float32)
    lib.aclemu_attention_blocks(
        _address(q),
        q.strides[0] // 4 if rows > 1 else d,
        rows,
        d,
        keys.pointer,
        keys.data.strides[0] // 4,
        values.pointer,
        values.data.strides[0] // 4,
        values.n,
        ffi.cast("const int64_t *", bounds.ctypes.data),
        len(bounds) - 1,
        pre,
        int(fp16),
        post,
        ROUNDING[rounding],
        int(zero_unseen),
        _floats(row_max, "row_max", rows),
        _floats(row_sum, "row_sum", rows),
        _floats(acc, "acc", rows * values.n),
        int(acc_set),
        _floats(work, "work"),
    )


def store_rows(dst: np.ndarray, src: np.ndarray, divisor: np.ndarray | None, rounding: str | None) -> None:
    """dst = src / divisor[:, None] (src itself when divisor is None) narrowed by ``rounding`` into
    dst's dtype: "fp16_away" into fp16, "bf16_away" into bf16 (CAST_ROUND), "fp16_even" into fp16
    (to nearest even, as numpy), None into fp32. dst
    [rows, cols] may have any row stride; src is C-contiguous fp32 of its shape."""
    dtype = {"fp16_away": np.float16, "fp16_even": np.float16, "bf16_away": ml_dtypes.bfloat16, None: np.float32}[
        rounding
    ]
    if dst.dtype != dtype or dst.shape != src.shape or not has_contiguous_rows(dst) or not dst.flags.writeable:
        raise ValueError(
            f"store_rows: dst must be a writeable {np.dtype(dtype)} [rows, cols] of src's shape with contiguous rows"
        )
    rows, cols = src.shape
    if dst.size:
        lib.aclemu_store_rows(
            ffi.cast("void *", dst.ctypes.data),
            dst.strides[0] // dst.itemsize,
            _floats(src, "src", written=False),
            ffi.NULL if divisor is None else _floats(divisor, "divisor", rows, written=False),
            rows,
            cols,
            ROUNDING[rounding],
        )


def softmax_probs_(s: np.ndarray, row_max: np.ndarray, row_sum: np.ndarray, lane0: int = 0) -> None:
    """P = exp(S - m) / l in place for a [rows, cols] block, from the forward's statistics given as
    [rows, lanes] (column j reads lane (lane0 + j) % lanes)."""
    rows, cols = s.shape
    if row_max.shape != row_sum.shape or row_max.ndim != 2 or row_max.shape[0] != rows:
        raise ValueError("row_max and row_sum must both be [rows, lanes]")
    lanes = row_max.shape[1]
    # Named, so the contiguous copies outlive the call that reads them through raw pointers.
    row_max, row_sum = np.ascontiguousarray(row_max), np.ascontiguousarray(row_sum)
    lib.aclemu_softmax_probs(
        _floats(s, "s"),
        rows,
        cols,
        _floats(row_max, "row_max", written=False),
        _floats(row_sum, "row_sum", written=False),
        lanes,
        lane0 % max(lanes, 1),
    )


def round_product(dst: np.ndarray, a: np.ndarray, b: np.ndarray | None = None, rounding: str | None = None) -> None:
    """dst = a * b (or a) narrowed by ``rounding``; all of one shape, dst may be a."""
    for x, name in ((a, "a"), (b, "b")):
        if x is not None and x.shape != dst.shape:
            raise ValueError(f"round_product: {name} has shape {x.shape}, dst {dst.shape}")
    lib.aclemu_round_product(
        _floats(dst, "dst"),
        _floats(a, "a", written=dst is a),
        ffi.NULL if b is None else _floats(b, "b", written=False),
        dst.size,
        ROUNDING[rounding],
    )


def softmax_grad_(
    grad: np.ndarray, probs: np.ndarray, dsum: np.ndarray, keep: np.ndarray | None = None, rounding: str | None = None
) -> None:
    """dS = P * (dP * keep - D) narrowed by ``rounding``, in place over grad (= dP) [rows, cols];
    D holds one value per row, keep (dropout factors) is None or of grad's shape."""
    rows, cols = grad.shape
    for x, name in ((probs, "probs"), (keep, "keep")):
        if x is not None and x.shape != grad.shape:
            raise ValueError(f"softmax_grad_: {name} has shape {x.shape}, grad {grad.shape}")
    lib.aclemu_softmax_grad(
        _floats(grad, "grad"),
        _floats(probs, "probs", written=False),
        ffi.NULL if keep is None else _floats(keep, "keep", written=False),
        _floats(dsum, "dsum", rows, written=False),
        rows,
        cols,
        ROUNDING[rounding],
    )


def scatter_add_rows(acc: np.ndarray, pos: np.ndarray, vals: np.ndarray) -> None:
    """acc[pos[i]] += vals[i] row by row in order (a repeated position adds each time, in order),
    for a float32 acc [rows, cols] with contiguous rows and float32 vals [len(pos), cols]."""
    pos = np.ascontiguousarray(pos, dtype=np.int64)
    vals = np.ascontiguousarray(vals, dtype=np.float32)
    if acc.dtype != np.float32 or not has_contiguous_rows(acc) or not acc.flags.writeable:
        raise ValueError("scatter_add_rows: acc must be a writeable float32 [rows, cols] with contiguous rows")
    if pos.ndim != 1 or vals.shape != (len(pos), acc.shape[1]):
        raise ValueError(f"scatter_add_rows: vals has shape {vals.shape}, expected {(len(pos), acc.shape[1])}")
    if len(pos) and (pos.min() < 0 or pos.max() >= acc.shape[0]):
        raise ValueError(f"scatter_add_rows: a position lies outside [0, {acc.shape[0]})")
    if len(pos):
        lib.aclemu_scatter_add_rows(
            ffi.cast("float *", acc.ctypes.data),
            acc.strides[0] // 4,
            ffi.cast("const int64_t *", pos.ctypes.data),
            ffi.cast("const float *", vals.ctypes.data),
            len(pos),
            acc.shape[1],
        )


def copy_pieces(
    dst: np.ndarray,
    src: np.ndarray,
    dst_offsets: np.ndarray,
    src_offsets: np.ndarray,
    *,
    pieces: int,
    piece_bytes: int,
    dst_stride: int,
    src_stride: int,
) -> None:
    """For each pair i, in order: copy ``pieces`` pieces of ``piece_bytes`` from src's first element
    + src_offsets[i] + p * src_stride bytes to dst's first element + dst_offsets[i] + p * dst_stride.

    Before anything is copied, every piece is checked to lie inside the memory its array spans.
    """
    dst_offsets = np.ascontiguousarray(dst_offsets, dtype=np.int64)
    src_offsets = np.ascontiguousarray(src_offsets, dtype=np.int64)
    if dst_offsets.shape != src_offsets.shape or dst_offsets.ndim != 1:
        raise ValueError("dst_offsets and src_offsets must be 1-D and of one length")
    if not dst.flags.writeable:
        raise ValueError("copy_pieces: dst is read-only")
    if len(dst_offsets) == 0 or pieces <= 0 or piece_bytes <= 0:
        return
    for array, offsets, stride, name in ((dst, dst_offsets, dst_stride, "dst"), (src, src_offsets, src_stride, "src")):
        low, high = _byte_bounds(array)
        first = array.ctypes.data
        if (
            stride < 0
            or first + offsets.min() < low
            or first + offsets.max() + (pieces - 1) * stride + piece_bytes > high
        ):
            raise ValueError(f"copy_pieces: a piece lies outside {name}")
    lib.aclemu_copy_pieces(
        ffi.cast("char *", dst.ctypes.data),
        ffi.cast("const char *", src.ctypes.data),
        ffi.cast("const int64_t *", dst_offsets.ctypes.data),
        ffi.cast("const int64_t *", src_offsets.ctypes.data),
        len(dst_offsets),
        pieces,
        piece_bytes,
        dst_stride,
        src_stride,
    )


_byte_bounds = getattr(np.lib, "array_utils", np).byte_bounds  # numpy 2 moved it


# -- IncreFlashAttention (decode) ----------------------------------------------------------------
_DECODED = {np.dtype(np.float16): 0, np.dtype(ml_dtypes.bfloat16): 1, np.dtype(np.int8): 2}


def _decode_args(q_or_p, base, offsets, head_stride, d, dequant):
    heads, groups = q_or_p.shape[:2]
    kind = _DECODED.get(base.dtype)
    if kind is None or offsets.dtype != np.int64 or offsets.ndim != 1 or not offsets.flags.c_contiguous:
        raise ValueError("decode: base must be fp16/bf16/int8 and offsets a contiguous 1-D int64 array")
    if d > 512:
        raise ValueError(f"decode: D = {d} exceeds 512")
    scale, shift = (None, None) if dequant is None else dequant
    if (kind == 2) != (dequant is not None):
        raise ValueError("decode: int8 rows need (scale, shift) [heads, D], other kinds none")
    pointers = [ffi.NULL if x is None else _floats(x, "dequant", heads * d, written=False) for x in (scale, shift)]
    return (
        heads,
        groups,
        ffi.cast("void *", base.ctypes.data),
        ffi.cast("int64_t *", offsets.ctypes.data),
        head_stride,
        offsets.size,
        d,
        kind,
        *pointers,
    )


def decode_scores(
    scores: np.ndarray, q: np.ndarray, base: np.ndarray, offsets: np.ndarray, head_stride: int, dequant=None
) -> None:
    """scores [heads, groups, rows] = q [heads, groups, D] . cache rows: row j of head h is the D
    values h * head_stride + offsets[j] elements after `base`'s first element (int8 rows are
    dequantised by (scale, shift) [heads, D] as (x + shift) * scale)."""
    d = q.shape[2]
    args = _decode_args(q, base, offsets, head_stride, d, dequant)
    lib.aclemu_decode_scores(
        _floats(scores, "scores", q.shape[0] * q.shape[1] * offsets.size), _floats(q, "q", written=False), *args
    )


def decode_values(
    acc: np.ndarray, p: np.ndarray, base: np.ndarray, offsets: np.ndarray, head_stride: int, dequant=None
) -> None:
    """acc [heads, groups, D] += p [heads, groups, rows] . the cache rows (as in decode_scores)."""
    d = acc.shape[2]
    args = _decode_args(p, base, offsets, head_stride, d, dequant)
    if p.shape[2] != offsets.size:
        raise ValueError("decode_values: p and offsets disagree on the rows")
    lib.aclemu_decode_values(_floats(acc, "acc"), _floats(p, "p", written=False), *args)
