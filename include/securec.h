/* aclnn-emu: the part of the bounds-checked C library (libc_sec, "securec.h") that CANN's samples
 * use, header-only. A CANN toolkit ships it in $ASCEND_HOME_PATH/include. */
#ifndef ACLNN_EMU_SECUREC_H_
#define ACLNN_EMU_SECUREC_H_

#include <stddef.h>
#include <string.h>

#ifndef EOK
#define EOK 0
#endif
#define ACLNN_EMU_ERANGE 34        /* the destination is too small */
#define ACLNN_EMU_EINVAL 22        /* a null pointer */

typedef int errno_t;

#ifdef __cplusplus
extern "C" {
#endif

/* Copies count bytes unless dest is null or smaller than count (then dest is zeroed where it can be). */
static inline errno_t memcpy_s(void *dest, size_t destMax, const void *src, size_t count)
{
    if (dest == NULL || src == NULL) {
        if (dest != NULL && destMax > 0) memset(dest, 0, destMax);
        return ACLNN_EMU_EINVAL;
    }
    if (count > destMax) {
        memset(dest, 0, destMax);
        return ACLNN_EMU_ERANGE;
    }
    memmove(dest, src, count);
    return EOK;
}

/* Fills count bytes with c unless dest is null or smaller than count. */
static inline errno_t memset_s(void *dest, size_t destMax, int c, size_t count)
{
    if (dest == NULL) return ACLNN_EMU_EINVAL;
    if (count > destMax) {
        memset(dest, c, destMax);
        return ACLNN_EMU_ERANGE;
    }
    memset(dest, c, count);
    return EOK;
}

#ifdef __cplusplus
}
#endif

#endif  /* ACLNN_EMU_SECUREC_H_ */
