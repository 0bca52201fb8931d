"""Settings: every ACLNN_EMU_* variable is read and checked here (README.md, "Environment").

Uniform rules: surrounding blanks and an empty value mean "unset" (the default); names of choices
are matched without regard to case and stored in their canonical spelling; flags take
0/1/false/true/no/yes/off/on; sizes are bytes with an optional K/M/G/T (binary) suffix.

A bad value never breaks `import aclnn_emu`: it becomes one line on stderr naming the variable,
the value and the allowed values, `problem` holds that text, the setting keeps its default, and
every runtime call fails until the environment is fixed (it is read again at aclInit). A variable
that looks like a setting but is none (a typo) gets one warning line.
"""

import ctypes
import dataclasses
import difflib
import os
import re
import sys

from . import platform, versions

SOCS = tuple(dict.fromkeys(platform.names() + platform.names(ascend950=True)))  # part names and family aliases
SANITIZE_MODES = ("warn", "off", "error")
LOG_LEVELS = ("warning", "info", "debug", "error")
ISAS = ("auto", "avx512", "avx2", "baseline")
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
MAX_DEVICE_MEMORY = 16 << 40  # each device maps its arena twice into the 47-bit address space
MAX_DEVICE_COUNT = (1 << 31) - 1  # device ids are int32_t
MAX_THREADS = 256
CACHE_LEVELS = ("L1", "L2", "L3")  # data caches, per core for L1 and L2
PREFIX = "ACLNN_EMU_"
SUGGEST_CUTOFF = 0.85  # difflib's similarity above which a misspelt choice gets a "did you mean"
CONSEQUENCE = "calls fail until it is fixed (settings are read again at aclInit)"
# Lines a parent `aclnn-emu` process has printed already (one per line), so that the program it
# starts, which reads the same settings, does not print them a second time. No ACLNN_EMU_ prefix:
# it is no setting.
SAID_VARIABLE = "_ACLNN_EMU_SAID"


def _choice(values):
    canonical = {v.lower(): v for v in values}

    def parse(text):
        if text.lower() not in canonical:
            raise ValueError
        return canonical[text.lower()]

    return parse


_FLAGS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}


def _flag(text) -> bool:
    return _FLAGS[text.lower()]  # KeyError is a ValueError's sibling: both mean "not allowed"


def _size(text) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?", text.upper())
    if not m:
        raise ValueError
    size = int(float(m[1]) * _UNITS[m[2]])
    if not 1 <= size <= MAX_DEVICE_MEMORY:
        raise ValueError
    return size


def _soc(text) -> str:
    """A part name or a family alias (any case) -> its canonical spelling; `check` resolves it to a
    part of the selected release (what aclrtGetSocName returns)."""
    return _choice(SOCS)(text)


def _count(text) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_DEVICE_COUNT:
        raise ValueError
    return int(text)


def _threads(text) -> int:
    """auto (0: one per core, at most 16) or a worker count."""
    if text.lower() == "auto":
        return 0
    if not text.isdigit() or not 1 <= int(text) <= MAX_THREADS:
        raise ValueError
    return int(text)


def _cache_sizes(text) -> tuple[int, ...]:
    """auto (()) or the L1, L2 and L3 data cache sizes, comma-separated."""
    if text.lower() == "auto":
        return ()
    sizes = tuple(_size(part.strip()) for part in text.split(","))
    if len(sizes) != len(CACHE_LEVELS):
        raise ValueError
    return sizes


def _trace_file(text) -> str:
    """An absolute path (a later chdir of the program does not move the file) in an existing directory."""
    path = os.path.abspath(text)
    if os.path.isdir(path) or not os.path.isdir(os.path.dirname(path)):
        raise ValueError
    return path


@dataclasses.dataclass(frozen=True)
class Setting:
    variable: str
    field: str | None  # the Config field it sets; None for one read by the C library itself
    default: str
    allowed: str  # said in the error line and the README
    parse: object  # text -> value; raises ValueError/KeyError for a value that is not allowed
    effect: str
    choices: tuple = ()  # the names it takes, for a "did you mean" on a misspelt one

    def rejected(self, text: str) -> str:
        """The line that says `text` is not allowed, with the closest choice when one is close."""
        canonical = {c.lower(): c for c in self.choices}
        close = difflib.get_close_matches(text.lower(), list(canonical), 1, SUGGEST_CUTOFF)
        hint = f" (did you mean {canonical[close[0]]}?)" if close else ""
        return f"{self.variable}={text!r} is not allowed{hint}: use {self.allowed}"


SETTINGS = (
    Setting(
        "ACLNN_EMU_CANN_VERSION",
        "cann_version",
        versions.DEFAULT,
        ", ".join(versions.ORDER),
        _choice(versions.ORDER),
        "the CANN release presented: the version functions, the rules that changed between releases "
        "(aclnn_emu/versions.py), the part names",
        versions.ORDER,
    ),
    Setting(
        "ACLNN_EMU_SOC",
        "soc",
        "Ascend910B",
        f"a family name ({', '.join(platform.FAMILIES)}) or one of their {len(platform.PARTS)} part names "
        f"(under CANN 9.x: {platform.A950} or one of its {len(platform.PARTS_950)} part names; "
        "`aclnn-emu coverage` lists them), any case",
        _soc,
        "the emulated part: aclrtGetSocName, its family's operator rules, its cores and memory",
        SOCS,
    ),
    Setting(
        "ACLNN_EMU_STRICT",
        "strict",
        "0",
        "0/1, false/true, no/yes, off/on",
        _flag,
        "rules the CANN source only suggests: off runs the call with a portability warning, "
        "on fails such a call with its rule's code instead",
    ),
    Setting(
        "ACLNN_EMU_SANITIZE",
        "sanitize",
        "warn",
        ", ".join(SANITIZE_MODES) + " (any case)",
        _choice(SANITIZE_MODES),
        "device-memory sanitizer; error also fails the call (or stream task)",
        SANITIZE_MODES,
    ),
    Setting(
        "ACLNN_EMU_SYNC",
        "sync",
        "0",
        "0/1, false/true, no/yes, off/on",
        _flag,
        "on runs stream tasks inline in the calling thread (easier debugging)",
    ),
    Setting(
        "ACLNN_EMU_LOG",
        "log",
        "warning",
        ", ".join(LOG_LEVELS) + " (any case)",
        _choice(LOG_LEVELS),
        "level of the emulator's own log on stderr",
        LOG_LEVELS,
    ),
    Setting(
        "ACLNN_EMU_DEVICE_MEMORY",
        "device_memory",
        "",
        "bytes, optionally with K, M, G or T (powers of 1024), from 1 to 16T",
        _size,
        "device memory per device (default: the part's HBM); pages are committed only when touched",
    ),
    Setting(
        "ACLNN_EMU_DEVICE_COUNT",
        "device_count",
        "1",
        f"an integer from 1 to {MAX_DEVICE_COUNT}",
        _count,
        "number of devices",
    ),
    Setting(
        "ACLNN_EMU_TRACE",
        "trace",
        "",
        "a file path in an existing directory",
        _trace_file,
        "writes a Chrome trace-event file there (Perfetto, chrome://tracing): runtime calls, stream tasks, "
        "kernels, copies, event arrows",
    ),
    Setting(
        "ACLNN_EMU_ISA",
        "isa",
        "auto",
        ", ".join(ISAS) + " (any case)",
        _choice(ISAS),
        "instruction set of the kernels' compiled loops (read when they load): auto is the best the CPU "
        "has; a lower level reproduces another machine's speed, results stay bit-identical",
        ISAS,
    ),
    Setting(
        "ACLNN_EMU_THREADS",
        "threads",
        "auto",
        f"auto or an integer from 1 to {MAX_THREADS}",
        _threads,
        "worker threads of the kernels (read at their first parallel call and at aclInit): auto is one per "
        "core, at most 16; results are bit-identical for any count",
    ),
    Setting(
        "ACLNN_EMU_CACHE_SIZES",
        "cache_sizes",
        "auto",
        "auto or three sizes (bytes, optionally with K, M or G) for L1,L2,L3, e.g. 32K,512K,16M",
        _cache_sizes,
        "data cache sizes the kernels size their blocks by: auto reads the CPU's; others model another "
        "machine's speed, results stay bit-identical",
    ),
    Setting(
        "ACLNN_EMU_PYTHONPATH",
        None,
        "",
        f"directories separated by '{os.pathsep}'",
        str,
        "read by libascendcl.so before Python starts: directories the embedded interpreter searches first",
    ),
)
BY_VARIABLE = {s.variable: s for s in SETTINGS}


@dataclasses.dataclass(frozen=True)
class Config:
    cann_version: str
    soc: str
    strict: bool
    sanitize: str
    sync: bool
    log: str
    device_memory: int
    device_count: int
    trace: str  # "" when off
    isa: str
    threads: int  # 0: one per core
    cache_sizes: tuple[int, ...]  # L1, L2, L3 bytes; () reads the CPU's


DEFAULTS = {s.field: s.parse(s.default) if s.default else s.default for s in SETTINGS if s.field}
DEFAULTS["soc"] = platform.part(DEFAULTS["soc"]).name
DEFAULTS["device_memory"] = platform.part(DEFAULTS["soc"]).device_memory


def check(env) -> tuple[Config, list[str], list[str]]:
    """(the settings, one line per bad value, one line per unknown ACLNN_EMU_* name) for an environment.

    A bad value leaves its setting at the default, so everything that only reads settings keeps working.
    """
    values, errors = {}, []
    for s in SETTINGS:
        text = env.get(s.variable, "").strip()
        if not text or s.field is None:
            continue
        try:
            values[s.field] = s.parse(text)
        except (ValueError, KeyError):
            errors.append(s.rejected(text))
    unknown = []
    for name in env:
        if name.upper().startswith(PREFIX) and name not in BY_VARIABLE:
            close = difflib.get_close_matches(name.upper()[len(PREFIX) :], [v[len(PREFIX) :] for v in BY_VARIABLE], 1)
            unknown.append(
                f"{name} is not a setting of aclnn-emu and is ignored; "
                + (f"did you mean {PREFIX}{close[0]}?" if close else f"the settings are {', '.join(BY_VARIABLE)}")
            )
    release = versions.RELEASES[values.get("cann_version", DEFAULTS["cann_version"])]
    if "soc" in values:
        if values["soc"] in release.parts:
            values["soc"] = platform.part(values["soc"], release.ascend950).name
        else:
            errors.append(not_in_release(values.pop("soc"), release.name))
    values.setdefault("device_memory", platform.part(values.get("soc", DEFAULTS["soc"])).device_memory)
    return Config(**{**DEFAULTS, **values}), errors, unknown


def not_in_release(soc: str, release: str) -> str:
    """The line that says a known part name is not one of the selected CANN release's."""
    return (
        f"ACLNN_EMU_SOC={soc!r} is not a part of CANN {release} (ACLNN_EMU_CANN_VERSION): "
        f"use {BY_VARIABLE['ACLNN_EMU_SOC'].allowed}"
    )


current = Config(**DEFAULTS)
problem: str | None = None  # the bad settings in one message, None when all are valid
_said: set[str] = set()


def environment() -> dict[str, str]:
    """The process's ACLNN_EMU_* variables (any case) as they are now: os.environ is a copy taken when
    Python started, which a C program's setenv before aclInit does not reach."""
    environ = ctypes.POINTER(ctypes.c_char_p).in_dll(ctypes.CDLL(None), "environ")
    found, i = {}, 0
    while environ[i] is not None:
        name, _, value = environ[i].decode("utf-8", "replace").partition("=")
        if name.upper().startswith(PREFIX):
            found[name] = value
        i += 1
    return found


def reload(env=None) -> Config:
    """Read the environment again (at import and at aclInit); print each new bad-setting line once."""
    global current, problem
    current, errors, unknown = check(environment() if env is None else env)
    problem = f"{'; '.join(errors)}; {CONSEQUENCE}" if errors else None
    for line in [f"aclnn-emu: {e}; {CONSEQUENCE}" for e in errors]:
        _say(line)
    for line in unknown:
        warn_once(line)
    return current


def warn_once(text: str) -> None:
    """One "aclnn-emu warning:" line on stderr, the first time `text` comes up."""
    _say(f"aclnn-emu warning: {text}")


def said_before() -> set[str]:
    """The lines this process printed, and those its `aclnn-emu` parent printed before starting it."""
    return _said | set(filter(None, os.environ.get(SAID_VARIABLE, "").split("\n")))


def _say(line: str) -> None:
    if line not in said_before():
        _said.add(line)
        print(line, file=sys.stderr, flush=True)


reload()
