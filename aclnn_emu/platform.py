"""The emulated parts: their names, families and the platform values the CANN tilings read.

A part is what `aclrtGetSocName` returns on hardware (`Ascend910B2`, `Ascend910_9392`, ...); its
family (`Short_SoC_version`: Ascend910B, Ascend910_93, Ascend910_95) picks the operators' rules
and kernels; its values (core counts, unified buffer, HBM, L2) size the tilings, the workspaces,
the device memory and aclrtGetMemInfo.

Sources, every value below is read from one of them:
- INI: `hicann/runtime` 8.5.0-beta.1 `src/platform/platform_config/<part>.ini`, keys
  [version] Short_SoC_version, [SoCInfo] cube_core_cnt, vector_core_cnt, memory_size, l2_size,
  [AICoreSpec] ub_size.
- KERNEL_LIB: `hicann/opbase` 8.5.0-beta.1 `src/nnopbase/composite_op/aclnn_engine/op_kernel_lib.cpp`
  `OpKernelLib::GetSocPath`: the part names aclrtGetSocName returns and the kernel folder of each
  (ascend910b/, ascend910_93/, ascend910_95/). It is the only 8.5 source naming the 910_95 parts.
- STUB_ARCH35: `ops-transformer` 8.5.0-beta.1
  `attention/flash_attention_score_grad/tests/ut/op_host/arch35/test_flash_attention_score_grad_tiling.cpp`:
  the platform the arch35 tilings are tested with (aicNum 32, aivNum 64, UB_SIZE 262144).

- INI_9: `hicann/runtime` v9.0.0 and v9.1.0 `src/platform/platform_config/cann-dev/Ascend950*.ini`: the
  parts of the same family under CANN 9.x (Short_SoC_version Ascend950, NpuArch 3510). 9.1.0 adds
  NEW_IN_9_1. Their rules and kernels are the arch35 ones; only their names and values differ.

Not established, and so not inferred:
- 8.5 publishes no platform config for any 910_95 part (KERNEL_LIB names them, nothing gives their
  values; the 9.0 configs describe "Ascend950" parts, a later release under other names). Every
  910_95 part uses STUB_ARCH35's cores and UB, and its HBM and L2 are unknown.
- Ascend910B2C.ini leaves memory_size empty.
Where the HBM is unknown the device memory defaults to UNKNOWN_HBM, the emulator's own choice.

`Ascend910B.ini` describes a first-generation Ascend 910 part (Short_SoC_version Ascend910,
KERNEL_LIB folder ascend910/), not Atlas A2. The family names are aliases: ALIASES says which part
each means (the part with the values the emulator used for the family before part names existed).
"""

import dataclasses

GIB, MIB, KIB = 1 << 30, 1 << 20, 1 << 10
UNKNOWN_HBM = 64 * GIB  # device memory where the part's HBM is not published (emulator choice)


@dataclasses.dataclass(frozen=True)
class Part:
    name: str  # what aclrtGetSocName returns
    family: str  # Short_SoC_version: selects the operators' rules and kernels
    aic_cores: int  # cube cores (GetCoreNumAic)
    aiv_cores: int  # vector cores (GetCoreNumAiv)
    ub_bytes: int  # unified buffer per core
    hbm_bytes: int | None  # memory_size; None: not published
    l2_bytes: int | None  # l2_size; None: not published
    source: str  # where the values are read

    @property
    def device_memory(self) -> int:
        """The default device memory: the part's HBM, UNKNOWN_HBM where that is not published."""
        return self.hbm_bytes or UNKNOWN_HBM


def _ini(name, family, cores, hbm_gib, l2_mib):
    """A part whose values INI gives: `cores` cube cores with two vector cores each, 192 KiB UB."""
    return Part(name, family, cores, 2 * cores, 192 * KIB, hbm_gib and hbm_gib * GIB, l2_mib * MIB, f"INI {name}.ini")


A2, A3, A5 = "Ascend910B", "Ascend910_93", "Ascend910_95"
FAMILIES = (A2, A3, A5)

_PARTS = [
    _ini("Ascend910B1", A2, 24, 64, 192),
    _ini("Ascend910B2", A2, 24, 64, 192),
    _ini("Ascend910B2C", A2, 24, None, 192),
    _ini("Ascend910B3", A2, 20, 64, 192),
    _ini("Ascend910B4", A2, 20, 32, 96),
    _ini("Ascend910B4-1", A2, 20, 32, 168),
    _ini("Ascend910_9362", A3, 20, 32, 168),
    _ini("Ascend910_9372", A3, 20, 64, 192),
    _ini("Ascend910_9381", A3, 24, 64, 192),
    _ini("Ascend910_9382", A3, 24, 64, 192),
    _ini("Ascend910_9391", A3, 24, 64, 192),
    _ini("Ascend910_9392", A3, 24, 64, 192),
] + [
    Part(f"Ascend910_{suffix}", A5, 32, 64, 256 * KIB, None, None, "KERNEL_LIB name, STUB_ARCH35 values")
    for suffix in (
        "9591",
        "9592",
        "9582",
        "9584",
        "9587",
        "9588",
        "9572",
        "9574",
        "9575",
        "9576",
        "9577",
        "9578",
        "950z",
        "957b",
        "957d",
        "9579",
        "9589",
        "958a",
        "958b",
        "9599",
        "9581",
    )
]
PARTS = {p.name: p for p in _PARTS}
"""The parts CANN 8.5 names."""

A950 = "Ascend950"  # CANN 9.x's Short_SoC_version for the family the emulator calls Ascend910_95


def _ini_950(name, cores, hbm_bytes, l2_mib):
    """A part INI_9 describes: `cores` cube cores with two vector cores each, 248 KiB UB."""
    return Part(name, A5, cores, 2 * cores, 248 * KIB, hbm_bytes, l2_mib * MIB, f"INI_9 {name}.ini")


PARTS_950 = {
    row[0]: _ini_950(*row)
    for row in (  # name, cube_core_cnt, memory_size, l2_size in MiB
        ("Ascend950DT_950x", 8, 24 * GIB, 32),
        ("Ascend950DT_950y", 8, 16 * GIB, 32),
        ("Ascend950DT_9571", 28, 144 * GIB, 128),
        ("Ascend950DT_9572", 28, 96 * GIB, 128),
        ("Ascend950DT_9573", 28, 135291569824, 112),
        ("Ascend950DT_9574", 28, 84 * GIB, 112),
        ("Ascend950DT_9575", 28, 96 * GIB, 128),
        ("Ascend950DT_9576", 28, 64 * GIB, 128),
        ("Ascend950DT_9577", 28, 84 * GIB, 112),
        ("Ascend950DT_9578", 28, 56 * GIB, 112),
        ("Ascend950DT_9581", 32, 144 * GIB, 128),
        ("Ascend950DT_9582", 32, 96 * GIB, 128),
        ("Ascend950DT_9582x", 32, 96 * GIB, 128),
        ("Ascend950DT_9583", 32, 126 * GIB, 112),
        ("Ascend950DT_9584", 32, 84 * GIB, 112),
        ("Ascend950DT_9585", 32, 96 * GIB, 128),
        ("Ascend950DT_9586", 32, 64 * GIB, 128),
        ("Ascend950DT_9587", 32, 84 * GIB, 112),
        ("Ascend950DT_9588", 32, 56 * GIB, 112),
        ("Ascend950DT_9591", 36, 144 * GIB, 128),
        ("Ascend950DT_9592", 36, 96 * GIB, 128),
        ("Ascend950DT_9595", 36, 96 * GIB, 128),
        ("Ascend950DT_9596", 36, 64 * GIB, 128),
        ("Ascend950DT_95A1", 36, 144 * GIB, 128),
        ("Ascend950DT_95A2", 36, 96 * GIB, 128),
        ("Ascend950PR_950z", 4, 24 * GIB, 16),
        ("Ascend950PR_9579", 28, 128 * GIB, 128),
        ("Ascend950PR_957b", 28, 112 * GIB, 112),
        ("Ascend950PR_957bx", 28, 112 * GIB, 112),
        ("Ascend950PR_957c", 28, 84 * GIB, 112),
        ("Ascend950PR_957d", 28, 96 * GIB, 96),
        ("Ascend950PR_9589", 32, 128 * GIB, 128),
        ("Ascend950PR_958b", 32, 112 * GIB, 112),
        ("Ascend950PR_9599", 36, 128 * GIB, 128),
    )
}
"""The parts CANN 9.x names for the family (INI_9)."""
NEW_IN_9_1 = ("Ascend950DT_9582x", "Ascend950PR_957bx")

ALIASES = {A2: "Ascend910B2", A3: "Ascend910_9392", A5: "Ascend910_9599"}
"""Family name -> the part it means: B2 and 9392 have the 24/48 cores and 64 GiB the family name
stood for; for 910_95 the choice changes only the name, as every 910_95 part has STUB_ARCH35's values."""
ALIASES_950 = {**ALIASES, A5: "Ascend950PR_9599", A950: "Ascend950PR_9599"}
"""The same under CANN 9.x, where the family is Ascend950 (either name means the 36-core part)."""


def names(ascend950: bool = False) -> tuple[str, ...]:
    """Every part name and family alias a CANN release knows: 8.5's, or 9.x's (`ascend950`)."""
    if not ascend950:
        return tuple(PARTS) + FAMILIES
    return tuple(p for p in PARTS if PARTS[p].family != A5) + tuple(PARTS_950) + FAMILIES + (A950,)


def part(name: str, ascend950: bool = False) -> Part:
    """The part a part name or family alias (canonical spelling) means, by 8.5's or 9.x's names."""
    name = (ALIASES_950 if ascend950 else ALIASES).get(name, name)
    return PARTS[name] if name in PARTS else PARTS_950[name]
