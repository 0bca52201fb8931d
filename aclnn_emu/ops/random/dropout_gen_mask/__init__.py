"""aclnnDropoutGenMask / V2: entry.py declares the entry points, checks.py runs the op_api checks (and
registers the prepare), launch.py writes the mask."""

from . import checks  # noqa: F401  (registers the prepare)
from .entry import OP, V1

OPS = (V1, OP)
