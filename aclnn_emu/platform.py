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

ALIASES = {A2: "Ascend910B2", A3: "Ascend910_9392", A5: "Ascend910_9599"}
"""Family name -> the part it means: B2 and 9392 have the 24/48 cores and 64 GiB the family name
stood for; for 910_95 the choice changes only the name, as every 910_95 part has STUB_ARCH35's values."""


def part(name: str) -> Part:
    """The part a part name or family alias (canonical spelling) means."""
    return PARTS[ALIASES.get(name, name)]
