"""aclnnSparseFlashAttentionGrad: the launch, layouts from the device tensors to the kernel and back, and the
workspace."""

import dataclasses
import numpy as np
from aclnn_emu import status
from aclnn_emu.kernels.sparse_attention.sparse_flash_attention_grad import Grads, sparse_flash_attention_grad
from aclnn_emu.kernels.sparse_attention.select import bsnd_rows, tnd_rows
from aclnn_emu.runtime import sanitizer
from aclnn_emu.runtime.errors import AclError


SELECTED_BLOCK_COUNT = 2048


@dataclasses.dataclass(frozen=True)
class Plan:
    """What tiling derived: the sizes the kernel reads the flat buffers with."""

    layout: str
    b: int
    s1: int
    s2: int
    t1: int
    t2: int
    g: int
    d: int
    dv: int
    dr: int  # 0 when rope is off (both rope inputs are needed to turn it on)
    scale: float
    block_size: int
    sparse_mode: int


def _run(a, p: Plan):
    half = a.query.np_dtype
    _check_kernel_limits(p)
    if p.layout == "TND":
        if a.actualSeqLengthskvOptional is None:
            _fail(
                "null-pointer",
                "layout TND without actualSeqLengthskvOptional: the NPU kernel reads the "
                "kv offsets through a null address",
            )
        cu_q = _buffer(a.actualSeqLengthsQueryOptional, np.int32, p.b, "actualSeqLengthsQueryOptional")
        cu_kv = _buffer(a.actualSeqLengthskvOptional, np.int32, None, "actualSeqLengthskvOptional")[: p.b]
        spans = tnd_rows(p.t1, cu_q, cu_kv, sanitizer.report)
    else:
        spans = bsnd_rows(p.b, p.s1, p.s2)
    rope = p.dr > 0
    read = lambda name, shape, dtype=half: _buffer(getattr(a, name), dtype, int(np.prod(shape)), name).reshape(shape)
    grads, copy_back = _outputs(a, p, half, rope)
    sparse_flash_attention_grad(
        read("query", (p.t1, p.g, p.d)),
        read("key", (p.t2, p.d)),
        read("value", (p.t2, p.dv)),
        read("sparseIndices", (p.t1, SELECTED_BLOCK_COUNT), np.int32),
        read("dOut", (p.t1, p.g, p.dv)),
        read("out", (p.t1, p.g, p.dv)),
        read("softmaxMax", (p.t1, p.g), np.float32),
        read("softmaxSum", (p.t1, p.g), np.float32),
        spans,
        q_rope=read("queryRopeOptional", (p.t1, p.g, p.dr)) if rope else None,
        k_rope=read("keyRopeOptional", (p.t2, p.dr)) if rope else None,
        scale=p.scale,
        block_size=p.block_size,
        sparse_mode=p.sparse_mode,
        report=sanitizer.report,
        outputs=grads,
    )
    for finish in copy_back:
        finish()


def _check_kernel_limits(p: Plan):
    """What the host tiling lets through but the NPU kernel cannot do (reference §2.D.3-4)."""
    if not 1 <= p.block_size <= 128:
        _fail(
            "undefined-behaviour",
            f"sparseBlockSize {p.block_size} is outside 1..128: the NPU kernel divides "
            "by it (0) or loops forever (> 128); the doc allows 1, 8, 16, 32, 64",
        )
    if p.dv != p.d or p.d % 128 or p.dr > 128 or p.g * p.dv > 128 * 512:
        sanitizer.report(
            "undefined-behaviour",
            f"head dims D={p.d}, Dv={p.dv}, Drope={p.dr}, N1={p.g}: the NPU kernel is built for "
            "D = Dv (a multiple of 128, at most 512 with 128 heads) and Drope <= 128 (doc: 512/64); "
            "the emulator computes the plain maths",
        )


def _fail(kind, message):
    sanitizer.report(kind, message)
    raise AclError(status.ACL_ERROR_RT_AICORE_EXCEPTION, message, rule=f"kernel.{kind}")


def _buffer(tensor, dtype, count, name) -> np.ndarray:
    """The first ``count`` elements the kernel reads from ``tensor`` as ``dtype`` (flat, zero copy when
    possible). A dtype the kernel does not expect is reinterpreted byte for byte, as the NPU does."""
    values = tensor.read(name)
    if values.dtype != np.dtype(dtype):
        values = np.ascontiguousarray(values).reshape(-1).view(np.uint8)
        values = values[: values.size // np.dtype(dtype).itemsize * np.dtype(dtype).itemsize].view(dtype)
    flat = values.reshape(-1)
    if count is not None and flat.size < count:
        _fail("out-of-bounds", f"{name} holds {flat.size} elements but the kernel reads {count}")
    return flat if count is None else flat[:count]


def _outputs(a, p: Plan, half, rope):
    """Writable arrays for the kernel's results: device views, or host arrays copied back after."""
    copy_back = []

    def target(name, shape):
        tensor = getattr(a, name)
        if tensor is None:
            sanitizer.report(
                "null-pointer",
                f"rope is on (queryRope and keyRope given) but {name} is nullptr: "
                "the NPU kernel writes through a null address; the emulator skips it",
            )
            return None
        count = int(np.prod(shape))
        view = tensor.view(name)
        if view.nbytes < count * half.itemsize:
            _fail("out-of-bounds", f"{name} holds {view.nbytes} bytes but the kernel writes {count * half.itemsize}")
        if view.dtype == half and view.flags.c_contiguous:
            return view.reshape(-1)[:count].reshape(shape)
        host = np.empty(shape, half)
        copy_back.append(lambda: _write_back(view, host))
        return host

    grads = Grads(
        dq=target("dQueryOut", (p.t1, p.g, p.d)),
        dk=target("dKeyOut", (p.t2, p.d)),
        dv=target("dValueOut", (p.t2, p.dv)),
        dq_rope=target("dQueryRopeOutOptional", (p.t1, p.g, p.dr)) if rope else None,
        dk_rope=target("dKeyRopeOutOptional", (p.t2, p.dr)) if rope else None,
    )
    return grads, copy_back


def _write_back(view, host):
    """Store ``host`` into an output the kernel cannot write in place (strided, or of another dtype:
    the NPU writes the query dtype's bytes from the start of the buffer, in logical order)."""
    flat = np.ascontiguousarray(view).reshape(-1)
    flat.view(np.uint8)[: host.nbytes] = host.reshape(-1).view(np.uint8)
    view[...] = flat.reshape(view.shape)
