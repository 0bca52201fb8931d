/* aclnn-emu: the part of the bounds-checked C library (libc_sec, "securec.h") that CANN's samples
 * use, header-only, with libc_sec's return codes. A CANN toolkit ships it in
 * $ASCEND_HOME_PATH/include. */
#ifndef ACLNN_EMU_SECUREC_H_
#define ACLNN_EMU_SECUREC_H_

#include <stddef.h>
#include <string.h>

#ifndef EOK
#define EOK 0
#endif
#define EINVAL_AND_RESET 150       /* a null source: the destination was zeroed */
#define ERANGE_AND_RESET 162       /* the destination is too small: it was zeroed (memset_s: filled) */
#define ACLNN_EMU_EINVAL 22        /* a null destination: nothing was written */

typedef int errno_t;

#ifdef __cplusplus
extern "C" {
#endif

/* Copies count bytes (overlap allowed) unless a pointer is null or dest is smaller than count. */
static inline errno_t memcpy_s(void *dest, size_t destMax, const void *src, size_t count)
{
    if (dest == NULL) return ACLNN_EMU_EINVAL;
    if (src == NULL) {
        memset(dest, 0, destMax);
        return EINVAL_AND_RESET;
    }
    if (count > destMax) {
        memset(dest, 0, destMax);
        return ERANGE_AND_RESET;
    }
    memmove(dest, src, count);
    return EOK;
}

static inline errno_t memmove_s(void *dest, size_t destMax, const void *src, size_t count)
{
    return memcpy_s(dest, destMax, src, count);
}

/* Fills count bytes with c unless dest is null or smaller than count. */
static inline errno_t memset_s(void *dest, size_t destMax, int c, size_t count)
{
    if (dest == NULL) return ACLNN_EMU_EINVAL;
    if (count > destMax) {
        memset(dest, c, destMax);
        return ERANGE_AND_RESET;
    }
    memset(dest, c, count);
    return EOK;
}

#ifdef __cplusplus
}
#endif

#endif  /* ACLNN_EMU_SECUREC_H_ */
