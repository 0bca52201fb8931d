/* aclnn-emu: aclnnScatterPaKvCacheGetWorkspaceSize / aclnnScatterPaKvCache (two-phase interface). */
#ifndef OP_API_INC_SCATTER_PA_KV_CACHE_H_
#define OP_API_INC_SCATTER_PA_KV_CACHE_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Phase 1: checks the arguments and returns the workspace size and an executor. */
ACLNN_API aclnnStatus aclnnScatterPaKvCacheGetWorkspaceSize(
    const aclTensor *key,
    const aclTensor *keyCacheRef,
    const aclTensor *slotMapping,
    const aclTensor *value,
    const aclTensor *valueCacheRef,
    const aclTensor *compressLensOptional,
    const aclTensor *compressSeqOffsetOptional,
    const aclTensor *seqLensOptional,
    char *cacheModeOptional,
    char *scatterModeOptional,
    const aclIntArray *stridesOptional,
    const aclIntArray *offsetsOptional,
    uint64_t *workspaceSize,
    aclOpExecutor **executor);

/* Phase 2: runs the executor on the stream. */
ACLNN_API aclnnStatus aclnnScatterPaKvCache(
    void *workspace,
    uint64_t workspaceSize,
    aclOpExecutor *executor,
    aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // OP_API_INC_SCATTER_PA_KV_CACHE_H_
