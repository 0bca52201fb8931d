"""Bindings of acl/acl_base_rt.h: the SoC name and data buffers (the fp16 and dtype-size helpers are
C in the shim, shim/pure.cpp)."""

from ..runtime import api as rt
from ..runtime import data_buffers
from . import boundary
from .boundary import addr, c, ptr

_soc_name = {}


@c
def aclrtGetSocName():
    name = rt.soc_name()
    if name not in _soc_name:
        _soc_name[name] = boundary.ffi.new("char[]", name.encode())
    return _soc_name[name]


@c
def aclCreateDataBuffer(data, size):
    return ptr(data_buffers.create(addr(data), size), "aclDataBuffer *")


@c
def aclDestroyDataBuffer(buffer):
    data_buffers.destroy(addr(buffer))


@c
def aclUpdateDataBuffer(buffer, data, size):
    data_buffers.update(addr(buffer), addr(data), size)


@c
def aclGetDataBufferAddr(buffer):
    return ptr(data_buffers.address(addr(buffer)))


@c
def aclGetDataBufferSize(buffer):
    return data_buffers.size(addr(buffer)) & 0xFFFFFFFF


@c
def aclGetDataBufferSizeV2(buffer):
    return data_buffers.size(addr(buffer))
