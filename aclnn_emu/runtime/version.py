"""The CANN version the emulator presents, in one place: aclrtGetVersion, aclsysGetVersionStr/Num
and the toolkit's share/info/<package>/version.info files all derive from it."""

import os
import pathlib

from .. import status
from .errors import AclError

CANN_VERSION = "8.5.0"
# The AscendCL API version each CANN release's acl_rt.h declares (ACL_MAJOR/MINOR/PATCH_VERSION).
_ACL_API = {"8.5.0": (1, 16, 0)}
# The packages whose version.info the toolkit ships: the runtime and the operator package we emulate.
PACKAGES = ("runtime", "ops-transformer")
# aclsysGetVersionNum's weights (runtime src/acl/aclrt_impl/acl.cpp, CalculateVersionNum).
_WEIGHTS = (10_000_000, 100_000, 1_000)
_PRERELEASE = (("alpha", 300), ("beta", 200), ("rc", 100))


def acl_api_version() -> tuple[int, int, int]:
    return _ACL_API[CANN_VERSION]


def version_info_text() -> str:
    return f"Version={CANN_VERSION}\n"


def _info_file(package: str) -> pathlib.Path | None:
    home = os.environ.get("ASCEND_HOME_PATH")
    if not home or not os.path.isdir(home):
        return None
    return pathlib.Path(os.path.realpath(home)) / "share" / "info" / package / "version.info"


def _read(package: str) -> str | None:
    path = _info_file(package)
    if path is None or not path.is_file():
        return None
    for line in path.read_text(errors="replace").splitlines():
        if "Version=" in line:
            return line.split("Version=", 1)[1].strip() or None
    return None


def version_string(package: str) -> str:
    """aclsysGetVersionStr: the Version= line of $ASCEND_HOME_PATH/share/info/<pkg>/version.info,
    retried with '-' and '_' swapped; ACL_ERROR_INVALID_FILE when absent (GetPkgVersionContent)."""
    candidates = [package]
    if "-" in package or "_" in package:
        candidates.append(package.replace("-", "_") if "-" in package else package.replace("_", "-"))
    for name in candidates:
        found = _read(name)
        if found is not None:
            return found
    raise AclError(
        status.ACL_ERROR_INVALID_FILE,
        f"no version.info for package {package!r} under $ASCEND_HOME_PATH/share/info (is ASCEND_HOME_PATH set?)",
        rule="version.file",
    )


def version_number(text: str) -> int:
    """CalculateVersionNum: major*1e7 + minor*1e5 + patch*1e3, less 300/200/100 for alpha/beta/rc
    plus the prerelease number; a malformed string is ACL_ERROR_INTERNAL_ERROR."""
    bad = AclError(status.ACL_ERROR_INTERNAL_ERROR, f"version {text!r} cannot be parsed", rule="version.parse")
    parts = text.split(".", 2)
    if len(parts) < 3 or not parts[0].isdigit() or not parts[1].isdigit():
        raise bad
    digits = len(parts[2]) - len(parts[2].lstrip("0123456789"))
    if digits == 0:
        raise bad
    base = sum(w * int(v) for w, v in zip(_WEIGHTS, (parts[0], parts[1], parts[2][:digits])))
    suffix = parts[2][digits:]
    if not suffix:
        return base
    lowered = suffix.lower()
    for keyword, weight in _PRERELEASE:
        at = lowered.find(keyword)
        if at != -1:
            if at > 1:
                raise bad
            number = suffix[at + len(keyword) :]
            stripped = number.lstrip(".-")
            if number and (len(number) - len(stripped) > 1 or not stripped.isdigit()):
                raise bad
            return base - weight + (int(stripped) if number else 0)
    raise bad
