"""aclnnFusedInferAttentionScore V1-V5: entry.py declares the five entry points over one inner
operator, checks.py (checks_arch35.py) runs the wrappers, the generated entry point and the tiling's
routes, launch.py runs the FIA-V3 kernels and delegate.py the routes shared with IFA and PFA."""

from . import checks  # noqa: F401  (registers each entry point's prepare)
from .entry import V1, V2, V3, V4, V5

OPS = (V1, V2, V3, V4, V5)
