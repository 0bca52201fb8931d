/* aclnn-emu: aclnnLightningIndexerGradGetWorkspaceSize / aclnnLightningIndexerGrad (two-phase interface). */
#ifndef OP_API_INC_LIGHTNING_INDEXER_GRAD_H_
#define OP_API_INC_LIGHTNING_INDEXER_GRAD_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Phase 1: checks the arguments and returns the workspace size and an executor. */
ACLNN_API aclnnStatus aclnnLightningIndexerGradGetWorkspaceSize(
    const aclTensor *query,
    const aclTensor *key,
    const aclTensor *dy,
    const aclTensor *spareIndices,
    const aclTensor *weights,
    const aclTensor *actucalSeqLengthsQuery,
    const aclTensor *actucalSeqLengthsKey,
    int64_t headNum,
    char *layout,
    int64_t sparseMode,
    int64_t preTokens,
    int64_t nextTokens,
    bool determinstic,
    const aclTensor *dQuery,
    const aclTensor *dKey,
    const aclTensor *dWeights,
    uint64_t *workspaceSize,
    aclOpExecutor **executor);

/* Phase 2: runs the executor on the stream. */
ACLNN_API aclnnStatus aclnnLightningIndexerGrad(
    void *workspace,
    uint64_t workspaceSize,
    aclOpExecutor *executor,
    aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // OP_API_INC_LIGHTNING_INDEXER_GRAD_H_
