"""What a program may ask about devices and streams: aclrtGetDeviceInfo, the device id mappings,
stream ids, status, priorities and failure modes, peer access, and the settings the runtime only
stores (operator timeouts, saturation mode, system parameters)."""

import threading

from .. import config, platform, status
from . import devices
from .api import stream_of
from .errors import AclError

# aclrtDevAttr values (acl_rt.h) the emulator can answer from the emulated part.
AICORE_CORE_NUM, CUBE_CORE_NUM, VECTOR_CORE_NUM = 101, 102, 201
TOTAL_GLOBAL_MEM_SIZE, L2_CACHE_SIZE = 301, 302
STREAM_STATUS_COMPLETE, STREAM_STATUS_NOT_READY = 0, 1
# aclrtDeviceGetStreamPriorityRange: 0 is the highest priority, 7 the lowest (acl_rt.h, priority of
# aclrtCreateStreamWithConfig).
LEAST_PRIORITY, GREATEST_PRIORITY = 7, 0
MAX_STREAMS = 2048  # streams one device offers; aclrtGetStreamAvailableNum counts down from it
FAILURE_MODES = (0, 1)  # ACL_CONTINUE_ON_FAILURE, ACL_STOP_ON_FAILURE
SAT_MODES = (0, 1)  # ACL_RT_OVERFLOW_MODE_SATURATION, ACL_RT_OVERFLOW_MODE_INFNAN
SYS_PARAM_OPTS = range(4)  # aclSysParamOpt: DETERMINISTIC .. ENABLE_KERNEL_EARLY_START

_lock = threading.Lock()
_settings = {"op_wait_timeout": 0, "op_execute_timeout": 0, "sat_mode": 0}
_sys_params: dict[int, int] = {}  # per process; CANN keeps the context's copy, see aclrtCtxSetSysParamOpt
_peers: set[tuple[int, int]] = set()  # (device, peer) pairs with peer access enabled


def invalid(message: str, rule: str, code: int = status.ACL_ERROR_INVALID_PARAM) -> AclError:
    return AclError(code, message, rule=rule)


def device_info(device_id: int, attr: int) -> int:
    """rtsDeviceGetInfo: the device must exist (107001); attributes of the emulated part."""
    devices.check_id(device_id)
    part = platform.part(config.current.soc)
    known = {
        AICORE_CORE_NUM: part.aic_cores,
        CUBE_CORE_NUM: part.aic_cores,
        VECTOR_CORE_NUM: part.aiv_cores,
        TOTAL_GLOBAL_MEM_SIZE: config.current.device_memory,
        L2_CACHE_SIZE: part.l2_bytes,
    }
    value = known.get(attr)
    if value is None:
        raise invalid(
            f"aclrtGetDeviceInfo attribute {attr} is not known for the emulated {part.name}",
            "device_info.attr",
            status.ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
        )
    return value


def same_device_id(device_id: int) -> int:
    """Logical, user and physical device ids coincide: one emulated device per id (107001 if absent)."""
    devices.check_id(device_id)
    return device_id


# -- streams --------------------------------------------------------------------------------------
def stream_query(stream: int) -> int:
    return STREAM_STATUS_NOT_READY if stream_of(stream).busy() else STREAM_STATUS_COMPLETE


def stream_id(stream: int) -> int:
    return stream_of(stream).id


def set_failure_mode(stream: int, mode: int) -> None:
    target = stream_of(stream)
    if mode not in FAILURE_MODES:
        raise invalid(
            f"failure mode {mode} is not ACL_CONTINUE_ON_FAILURE (0) or ACL_STOP_ON_FAILURE (1)",
            "stream.failure_mode",
            status.ACL_ERROR_RT_PARAM_INVALID,
        )
    target.failure_mode = mode


def streams_available() -> int:
    device = devices.current_context().device
    contexts = set(device.contexts) | ({device.primary} if device.primary else set())
    return MAX_STREAMS - sum(len(c.streams) for c in contexts)


# -- settings the runtime stores ------------------------------------------------------------------
def store(key: str, value: int) -> None:
    with _lock:
        _settings[key] = value


def setting(key: str) -> int:
    return _settings[key]


def set_sat_mode(mode: int) -> None:
    if mode not in SAT_MODES:
        raise invalid(f"overflow mode {mode} is not SATURATION (0) or INFNAN (1)", "sat_mode")
    store("sat_mode", mode)


def set_sys_param(opt: int, value: int) -> None:
    if opt not in SYS_PARAM_OPTS:
        raise invalid(f"aclSysParamOpt {opt} is not one of 0..{len(SYS_PARAM_OPTS) - 1}", "sys_param.opt")
    with _lock:
        _sys_params[opt] = value


def sys_param(opt: int) -> int:
    if opt not in SYS_PARAM_OPTS:
        raise invalid(f"aclSysParamOpt {opt} is not one of 0..{len(SYS_PARAM_OPTS) - 1}", "sys_param.opt")
    with _lock:
        if opt not in _sys_params:
            raise invalid(f"aclSysParamOpt {opt} was never set", "sys_param.unset", status.ACL_ERROR_RT_PARAM_INVALID)
        return _sys_params[opt]


# -- peer access (runtime src/acl/aclrt_impl/memory.cpp) ------------------------------------------
def can_access_peer(device_id: int, peer: int) -> int:
    """aclrtDeviceCanAccessPeerImpl: equal ids are ACL_ERROR_INVALID_PARAM before the runtime is asked;
    emulated devices all share one host, so any two existing ones can reach each other."""
    if device_id == peer:
        raise invalid("deviceId must differ from peerDeviceId", "peer.same")
    devices.check_id(peer)
    devices.check_id(device_id)
    return 1


def _pair(peer: int, flags: int | None) -> tuple[int, int]:
    if flags not in (None, 0):
        raise invalid(f"flags must be 0, not {flags}", "peer.flags", status.ACL_ERROR_FEATURE_UNSUPPORTED)
    device_id = devices.current_context().device.id
    if device_id == peer:
        raise invalid("the current device must differ from peerDeviceId", "peer.same")
    devices.check_id(peer)
    return device_id, peer


def enable_peer(peer: int, flags: int) -> None:
    pair = _pair(peer, flags)
    with _lock:
        _peers.add(pair)


def disable_peer(peer: int) -> None:
    pair = _pair(peer, None)
    with _lock:
        if pair not in _peers:
            raise invalid(
                f"peer access from device {pair[0]} to {peer} was not enabled",
                "peer.disabled",
                status.ACL_ERROR_RT_PARAM_INVALID,
            )
        _peers.discard(pair)


def peer_status(device_id: int, peer: int) -> int:
    devices.check_id(device_id)
    devices.check_id(peer)
    return int((device_id, peer) in _peers)
