"""aclDataType: enum values (acl_base.h), element sizes and numpy storage dtypes."""

import enum

import ml_dtypes
import numpy as np


class DataType(enum.IntEnum):
    ACL_DT_UNDEFINED = -1
    ACL_FLOAT = 0
    ACL_FLOAT16 = 1
    ACL_INT8 = 2
    ACL_INT32 = 3
    ACL_UINT8 = 4
    ACL_INT16 = 6
    ACL_UINT16 = 7
    ACL_UINT32 = 8
    ACL_INT64 = 9
    ACL_UINT64 = 10
    ACL_DOUBLE = 11
    ACL_BOOL = 12
    ACL_STRING = 13
    ACL_COMPLEX64 = 16
    ACL_COMPLEX128 = 17
    ACL_BF16 = 27
    ACL_INT4 = 29
    ACL_UINT1 = 30
    ACL_COMPLEX32 = 33
    ACL_HIFLOAT8 = 34
    ACL_FLOAT8_E5M2 = 35
    ACL_FLOAT8_E4M3FN = 36
    ACL_FLOAT8_E8M0 = 37
    ACL_FLOAT6_E3M2 = 38
    ACL_FLOAT6_E2M3 = 39
    ACL_FLOAT4_E2M1 = 40
    ACL_FLOAT4_E1M2 = 41

    @property
    def short(self) -> str:
        """The name CANN prints in messages (FLOAT16, BF16, ...)."""
        return self.name[4:] if self.name.startswith("ACL_") else self.name


# Storage dtype per aclDataType. HIFLOAT8 and the sub-byte floats have no numpy arithmetic type here;
# they are stored as raw bytes (moved bit-exactly, never computed on).
NUMPY = {
    DataType.ACL_FLOAT: np.dtype(np.float32),
    DataType.ACL_FLOAT16: np.dtype(np.float16),
    DataType.ACL_INT8: np.dtype(np.int8),
    DataType.ACL_INT32: np.dtype(np.int32),
    DataType.ACL_UINT8: np.dtype(np.uint8),
    DataType.ACL_INT16: np.dtype(np.int16),
    DataType.ACL_UINT16: np.dtype(np.uint16),
    DataType.ACL_UINT32: np.dtype(np.uint32),
    DataType.ACL_INT64: np.dtype(np.int64),
    DataType.ACL_UINT64: np.dtype(np.uint64),
    DataType.ACL_DOUBLE: np.dtype(np.float64),
    DataType.ACL_BOOL: np.dtype(np.bool_),
    DataType.ACL_COMPLEX64: np.dtype(np.complex64),
    DataType.ACL_COMPLEX128: np.dtype(np.complex128),
    DataType.ACL_BF16: np.dtype(ml_dtypes.bfloat16),
    DataType.ACL_HIFLOAT8: np.dtype(np.uint8),
    DataType.ACL_FLOAT8_E5M2: np.dtype(ml_dtypes.float8_e5m2),
    DataType.ACL_FLOAT8_E4M3FN: np.dtype(ml_dtypes.float8_e4m3fn),
    DataType.ACL_FLOAT8_E8M0: np.dtype(ml_dtypes.float8_e8m0fnu),
    DataType.ACL_COMPLEX32: np.dtype(np.uint32),
}

# aclDataTypeSize: bytes per element; 0 for undefined/string, sub-byte types report 1 like CANN.
SIZE = {dt: NUMPY[dt].itemsize for dt in NUMPY}
SIZE.update(
    {
        DataType.ACL_INT4: 1,
        DataType.ACL_UINT1: 1,
        DataType.ACL_FLOAT6_E3M2: 1,
        DataType.ACL_FLOAT6_E2M3: 1,
        DataType.ACL_FLOAT4_E2M1: 1,
        DataType.ACL_FLOAT4_E1M2: 1,
    }
)


# numpy dtypes that stand for exactly one aclDataType (uint8 is UINT8, not HIFLOAT8; uint32 is UINT32).
_FROM_NUMPY = {}
for _dt, _np in NUMPY.items():
    _FROM_NUMPY.setdefault(_np, _dt)


def from_numpy(dtype) -> DataType:
    dtype = np.dtype(dtype)
    if dtype in _FROM_NUMPY:
        return _FROM_NUMPY[dtype]
    raise ValueError(f"no aclDataType for numpy dtype {dtype}")


def coerce(value) -> DataType:
    """A DataType from an int; unknown values stay plain ints wrapped as ACL_DT_UNDEFINED-like."""
    try:
        return DataType(value)
    except ValueError:
        return DataType.ACL_DT_UNDEFINED
