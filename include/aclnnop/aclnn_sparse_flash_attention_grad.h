/* aclnn-emu: aclnnSparseFlashAttentionGradGetWorkspaceSize / aclnnSparseFlashAttentionGrad (two-phase interface). */
#ifndef OP_API_INC_SPARSE_FLASH_ATTENTION_GRAD_H_
#define OP_API_INC_SPARSE_FLASH_ATTENTION_GRAD_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Phase 1: checks the arguments and returns the workspace size and an executor. */
ACLNN_API aclnnStatus aclnnSparseFlashAttentionGradGetWorkspaceSize(
    const aclTensor *query,
    const aclTensor *key,
    const aclTensor *value,
    const aclTensor *sparseIndices,
    const aclTensor *dOut,
    const aclTensor *out,
    const aclTensor *softmaxMax,
    const aclTensor *softmaxSum,
    const aclTensor *actualSeqLengthsQueryOptional,
    const aclTensor *actualSeqLengthskvOptional,
    const aclTensor *queryRopeOptional,
    const aclTensor *keyRopeOptional,
    double scaleValue,
    int64_t sparseBlockSize,
    char *layoutOptional,
    int64_t sparseMode,
    int64_t preTokens,
    int64_t nextTokens,
    bool deterministic,
    const aclTensor *dQueryOut,
    const aclTensor *dKeyOut,
    const aclTensor *dValueOut,
    const aclTensor *dQueryRopeOutOptional,
    const aclTensor *dKeyRopeOutOptional,
    uint64_t *workspaceSize,
    aclOpExecutor **executor);

/* Phase 2: runs the executor on the stream. */
ACLNN_API aclnnStatus aclnnSparseFlashAttentionGrad(
    void *workspace,
    uint64_t workspaceSize,
    aclOpExecutor *executor,
    aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // OP_API_INC_SPARSE_FLASH_ATTENTION_GRAD_H_
