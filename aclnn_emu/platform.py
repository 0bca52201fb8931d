"""Per-chip platform values the CANN tilings read (core counts, unified-buffer size).

They decide workspace sizes and which duplicate writes race on different cores. Atlas A2/A3
(Ascend910B, Ascend910_93) training parts have 24 cube cores with two vector cores each and a
192 KiB unified buffer; the Ascend910_95 values are those of the arch35 tiling tests' platform stub.
The exact counts vary between chip models of a family and are inferred, not read off hardware.
"""
import dataclasses


@dataclasses.dataclass(frozen=True)
class Platform:
    aic_cores: int | None   # cube cores (GetCoreNumAic); None where no tiling here needs it
    aiv_cores: int          # vector cores (GetCoreNumAiv)
    ub_bytes: int           # unified buffer per core


PLATFORMS = {
    "Ascend910B": Platform(aic_cores=24, aiv_cores=48, ub_bytes=192 * 1024),
    "Ascend910_93": Platform(aic_cores=24, aiv_cores=48, ub_bytes=192 * 1024),
    "Ascend910_95": Platform(aic_cores=None, aiv_cores=64, ub_bytes=256 * 1024),
}
