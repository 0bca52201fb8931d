"""aclnnPromptFlashAttentionV3 (`aclnn_prompt_flash_attention_v3.cpp`): no checks of its own. It
passes every argument to the inner op, pseShift and innerPrecise included, whose rules and maths
live in pfa_precise and the shared path (prompt_flash_attention.run_inner). FusedInferAttentionScore
reuses this parameter set: `PARAMS` and `run`."""

from ..signature import Int64, Launch
from . import prompt_flash_attention as v2
from .adapters import entry

PSE_DOC = (
    "position term added to the scaled scores before the mask, [B|1, N, >=S1, >=S2] "
    "(FLOAT16 for a FLOAT16 or INT8 query, BF16 for BF16)"
)
INNER_PRECISE_DOC = (
    "0 high precision, 1 high performance (fp16 only; an fp16 pseShift forces high precision), "
    "2/3 the same with rows whose every key is masked set to 0"
)
OP = entry(
    "PromptFlashAttentionV3",
    "aclnn_prompt_flash_attention_v3.h",
    v2.OP,
    [p.name for p in v2.OP.params],
    added={"attentionOut": Int64("innerPrecise", default=1, doc=INNER_PRECISE_DOC)},
    docs={"pseShift": PSE_DOC},
)
PARAMS = OP.params


@OP.prepare
def run(a, env) -> Launch:
    return v2.run_inner(a, env)
