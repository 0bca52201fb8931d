"""IncreFlashAttentionV4 with a 5-D key/value (the GQA key/value NZ cache) on Atlas A2/A3: the 8.5
source fails every such call in its tiling (561002), and this module names the check that does.

GetRopeAndGqaFlag (incre_flash_attention_tiling.cpp) sets gqaKvNZFlag_ for a 5-D key. Without
page attention CheckQKOutShape then fails (a BSH key must be 3-D, a BNSD/BSND key 4-D: the
tiling's bsh_dims / bnsd_dims rules). With page attention the key stays NZ (ProcessPageAttentionFlag)
and the checks on the way are:
  - ProcessPseShift (incre_flash_attention_tiling_check.cpp): any pseShift fails first;
  - ProcessBlockTable: inputLayout_ keeps the query's layout, so the 65535 copy-stride limit on
    N2 x D applies to the BSH/BSND query layouts;
  - ProcessGqaKvNz: CheckGqaIOTensor (int8 key/value, i.e. antiquant; BF16 query and attentionOut;
    key and value [blocks, N2, D/32, blockSize, 32] without a 0 dim), then CheckGqaAntiquantTensor,
    which requires keyAntiquantScale and valueAntiquantScale. Those are FusedInferAttentionScore
    inputs: the IncreFlashAttention OpDef has none, ConvertOptionalInputsContext leaves them null,
    and the call fails there whatever else it passes. The kernel (incre_flash_attention_preload_dd.h)
    is never reached through V4.
"""

from aclnn_emu.dtypes import DataType


NZ_BLOCK = 32  # int8 elements of one 32-byte NZ fractal row


def pse_failure() -> tuple[str, str]:
    return "kv_nz.pse", "PseShift is not support for IFA GQA with KV NZ!"


def failure(a, antiquant: bool, d: int) -> tuple[str, str]:
    """ProcessGqaKvNz's first failing check as (rule, message); one always fails on V4."""
    bf16, i8 = DataType.ACL_BF16, DataType.ACL_INT8
    key, value = a.key.items[0], a.value.items[0]
    if not antiquant:
        return "kv_nz.antiquant", "IFA GQA with KV NZ only support antiquant!"
    for name, dtype, want in (
        ("query", a.query.dtype, bf16),
        ("key", key.dtype, i8),
        ("value", value.dtype, i8),
        ("attenOut", a.attentionOut.dtype, bf16),
    ):
        if dtype != want:
            return (
                f"kv_nz.{name}_dtype",
                f"In IFA GQA with KV NZ antiquant, {name} type should be {want.short}, but now it's {dtype.short}!",
            )
    for label, t in (("K", key), ("V", value)):
        if 0 in t.shape:
            return "kv_nz.zero_dim", f"The shape of {label}{list(t.shape)} should not have 0 dim in GQA with KV NZ!"
    for label, t in (("K", key), ("V", value)):
        if t.shape[2] != d // NZ_BLOCK or t.shape[4] != NZ_BLOCK:
            return (
                "kv_nz.shape",
                f"The shape of {label}{list(t.shape)} should be [{t.shape[0]}, {t.shape[1]}, "
                f"{d // NZ_BLOCK}, {t.shape[3]}, {NZ_BLOCK}] in GQA with KV NZ!",
            )
    return (
        "kv_nz.antiquant_scale",
        "In IFA GQA with KV NZ antiquant, the key/value's dequant scale desc should not "
        "be null! (keyAntiquantScale/valueAntiquantScale are not IncreFlashAttention inputs)",
    )
