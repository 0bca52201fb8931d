"""aclFormat enum values (acl_base.h)."""

import enum


class Format(enum.IntEnum):
    ACL_FORMAT_UNDEFINED = -1
    ACL_FORMAT_NCHW = 0
    ACL_FORMAT_NHWC = 1
    ACL_FORMAT_ND = 2
    ACL_FORMAT_NC1HWC0 = 3
    ACL_FORMAT_FRACTAL_Z = 4
    ACL_FORMAT_NC1HWC0_C04 = 12
    ACL_FORMAT_HWCN = 16
    ACL_FORMAT_NDHWC = 27
    ACL_FORMAT_FRACTAL_NZ = 29
    ACL_FORMAT_NCDHW = 30
    ACL_FORMAT_NDC1HWC0 = 32
    ACL_FRACTAL_Z_3D = 33
    ACL_FORMAT_NC = 35
    ACL_FORMAT_NCL = 47
    ACL_FORMAT_FRACTAL_NZ_C0_16 = 50
    ACL_FORMAT_FRACTAL_NZ_C0_32 = 51
    ACL_FORMAT_FRACTAL_NZ_C0_2 = 52
    ACL_FORMAT_FRACTAL_NZ_C0_4 = 53
    ACL_FORMAT_FRACTAL_NZ_C0_8 = 54

    @property
    def short(self) -> str:
        return self.name.replace("ACL_FORMAT_", "").replace("ACL_", "")


# Formats the generated aclnn path treats as ND (nnopbase FormatsLikeND); FRACTAL_NZ is not among them.
ND_LIKE = frozenset(
    {
        Format.ACL_FORMAT_ND,
        Format.ACL_FORMAT_NCHW,
        Format.ACL_FORMAT_NHWC,
        Format.ACL_FORMAT_NCL,
        Format.ACL_FORMAT_NCDHW,
    }
)


def coerce(value) -> Format:
    try:
        return Format(value)
    except ValueError:
        return Format.ACL_FORMAT_UNDEFINED
