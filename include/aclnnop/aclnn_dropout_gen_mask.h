/* aclnn-emu: aclnnDropoutGenMask / aclnnDropoutGenMaskV2 (two-phase interface). */
#ifndef OP_API_INC_DROPOUT_GEN_MASK_H_
#define OP_API_INC_DROPOUT_GEN_MASK_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Phase 1: checks the arguments and returns the workspace size and an executor. */
ACLNN_API aclnnStatus aclnnDropoutGenMaskGetWorkspaceSize(
    const aclIntArray *shape,
    double prob,
    int64_t seed,
    int64_t offset,
    aclTensor *out,
    uint64_t *workspaceSize,
    aclOpExecutor **executor);

/* Phase 2: runs the executor on the stream. */
ACLNN_API aclnnStatus aclnnDropoutGenMask(
    void *workspace,
    uint64_t workspaceSize,
    aclOpExecutor *executor,
    aclrtStream stream);

/* Phase 1: as aclnnDropoutGenMask, the random numbers drawn in probDataType. */
ACLNN_API aclnnStatus aclnnDropoutGenMaskV2GetWorkspaceSize(
    const aclIntArray *shape,
    double prob,
    int64_t seed,
    int64_t offset,
    aclDataType probDataType,
    aclTensor *out,
    uint64_t *workspaceSize,
    aclOpExecutor **executor);

/* Phase 2: runs the executor on the stream. */
ACLNN_API aclnnStatus aclnnDropoutGenMaskV2(
    void *workspace,
    uint64_t workspaceSize,
    aclOpExecutor *executor,
    aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // OP_API_INC_DROPOUT_GEN_MASK_H_
