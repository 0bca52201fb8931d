/* aclnn-emu: the bounds-checked memory functions of the Huawei secure C library that CANN's
 * samples include (securec.h), as thin host wrappers. Each returns 0 (EOK) on success. */
#ifndef __SECUREC_H__5D13A042_DC3F_4ED9_A8D1_882811274C27
#define __SECUREC_H__5D13A042_DC3F_4ED9_A8D1_882811274C27

#include <stddef.h>
#include <string.h>

#ifndef EOK
#define EOK 0
#endif
#define ERANGE_AND_RESET 162
#define EINVAL_AND_RESET 150

typedef int errno_t;

static inline errno_t memcpy_s(void *dest, size_t destMax, const void *src, size_t count) {
    if (dest == NULL || src == NULL) return EINVAL_AND_RESET;
    if (count > destMax) {
        memset(dest, 0, destMax);
        return ERANGE_AND_RESET;
    }
    memmove(dest, src, count);
    return EOK;
}

static inline errno_t memmove_s(void *dest, size_t destMax, const void *src, size_t count) {
    return memcpy_s(dest, destMax, src, count);
}

static inline errno_t memset_s(void *dest, size_t destMax, int c, size_t count) {
    if (dest == NULL) return EINVAL_AND_RESET;
    if (count > destMax) {
        memset(dest, c, destMax);
        return ERANGE_AND_RESET;
    }
    memset(dest, c, count);
    return EOK;
}

#endif
