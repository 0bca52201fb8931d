"""Graph capture from Python: what is queued on a stream inside `with capture(stream)` is recorded,
not run, into a Graph (an aclmdlRI) that replays it, in order and with the same arguments.

    with ae.Device(0) as dev, dev.stream() as s:
        step = ae.ops.IncreFlashAttentionV4.prepare(...)   # keep it: its workspace is reused
        with ae.capture(s) as graph:
            step.run(stream=s)                             # recorded
        for _ in range(10):
            graph.replay(s)                                # aclmdlRIExecuteAsync
        s.synchronize()
        graph.close()                                      # aclmdlRIDestroy (also on `with graph:`)

Failures raise the AclnnError subclass of their status code.
"""

import contextlib

from .device import Stream, _Handle
from .errors import typed
from .runtime import capture as rt_capture
from .runtime import device_facts

RELAXED = 2  # ACL_MODEL_RI_CAPTURE_MODE_RELAXED


class Graph(_Handle):
    """A captured model: `.replay(stream)`, `.run()`; `with` or `.close()` destroys it. It holds no
    handle until its capture has ended."""

    _destroy = staticmethod(rt_capture.destroy)

    def __init__(self):
        super().__init__(0)

    def replay(self, stream: Stream | None = None) -> None:
        """aclmdlRIExecuteAsync on `stream` (None: the default stream)."""
        with typed():
            rt_capture.execute_async(self.handle, 0 if stream is None else stream.handle)

    def run(self, timeout_ms: int = -1) -> None:
        """aclmdlRIExecute: replay on the default stream and wait."""
        with typed():
            rt_capture.execute(self.handle, timeout_ms)

    def close(self) -> None:
        if self.handle:
            super().close()
            self.handle = 0


@contextlib.contextmanager
def capture(stream: Stream, mode: int = RELAXED):
    """aclmdlRICaptureBegin on entry, aclmdlRICaptureEnd on exit (also when the block raises, so the
    stream is usable again); yields the Graph, which holds the model once the block has ended."""
    graph = Graph()
    with typed():
        rt_capture.begin(stream.handle, mode)
    try:
        yield graph
    finally:
        with typed():
            graph.handle = rt_capture.end(stream.handle)


def busy(stream: Stream) -> bool:
    """aclrtStreamQuery: True while work queued on the stream has not finished."""
    with typed():
        return device_facts.stream_query(stream.handle) == device_facts.STREAM_STATUS_NOT_READY
