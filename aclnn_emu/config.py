"""Settings read from the environment (documented in README.md, "Environment")."""
import dataclasses
import os

SOCS = ("Ascend910B", "Ascend910_93", "Ascend910_95")
SANITIZE_MODES = ("off", "warn", "error")
GiB = 1 << 30


def _size(text: str) -> int:
    """Bytes from '64G', '512M', '1073741824'."""
    text = text.strip().upper().rstrip("B").rstrip("I")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": GiB, "T": 1 << 40}.get(text[-1:], 1)
    return int(float(text.rstrip("KMGT")) * scale)


@dataclasses.dataclass(frozen=True)
class Config:
    soc: str = "Ascend910B"
    strict: bool = False
    sanitize: str = "warn"
    sync: bool = False
    log: str = "warning"
    device_memory: int = 64 * GiB
    device_count: int = 1

    @classmethod
    def from_env(cls, env=os.environ) -> "Config":
        soc = env.get("ACLNN_EMU_SOC", cls.soc)
        if soc not in SOCS:
            raise ValueError(f"ACLNN_EMU_SOC={soc!r} is not one of {', '.join(SOCS)}")
        sanitize = env.get("ACLNN_EMU_SANITIZE", cls.sanitize).lower()
        if sanitize not in SANITIZE_MODES:
            raise ValueError(f"ACLNN_EMU_SANITIZE={sanitize!r} is not one of {', '.join(SANITIZE_MODES)}")
        flag = lambda name: env.get(name, "0").strip().lower() in ("1", "true", "yes", "on")
        return cls(soc=soc, strict=flag("ACLNN_EMU_STRICT"), sanitize=sanitize,
                   sync=flag("ACLNN_EMU_SYNC"), log=env.get("ACLNN_EMU_LOG", cls.log).lower(),
                   device_memory=_size(env.get("ACLNN_EMU_DEVICE_MEMORY", str(cls.device_memory))),
                   device_count=int(env.get("ACLNN_EMU_DEVICE_COUNT", cls.device_count)))


current = Config.from_env()


def reload() -> Config:
    """Re-read the environment (aclInit does this so a process can change settings before init)."""
    global current
    current = Config.from_env()
    return current
