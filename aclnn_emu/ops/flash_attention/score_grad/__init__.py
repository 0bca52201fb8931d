"""aclnnFlashAttentionScoreGradV2: entry.py declares the entry points, checks.py runs the op_api and tiling checks (and
registers the prepare), launch.py moves data to and from the kernels."""

from . import checks  # noqa: F401  (registers each entry point's prepare)
from .entry import OP, UNPADDINGS, V1, V3, V4

OPS = (OP, V1, V3, *UNPADDINGS, V4)
