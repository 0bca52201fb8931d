/* aclnn-emu: aclnnFlashAttentionScoreGradV2GetWorkspaceSize / aclnnFlashAttentionScoreGradV2 (two-phase interface). */
#ifndef OP_API_INC_FLASH_ATTENTION_SCORE_GRAD_H_
#define OP_API_INC_FLASH_ATTENTION_SCORE_GRAD_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Phase 1: checks the arguments and returns the workspace size and an executor. */
ACLNN_API aclnnStatus aclnnFlashAttentionScoreGradV2GetWorkspaceSize(
    const aclTensor *query,
    const aclTensor *keyIn,
    const aclTensor *value,
    const aclTensor *dy,
    const aclTensor *pseShiftOptional,
    const aclTensor *dropMaskOptional,
    const aclTensor *paddingMaskOptional,
    const aclTensor *attenMaskOptional,
    const aclTensor *softmaxMaxOptional,
    const aclTensor *softmaxSumOptional,
    const aclTensor *softmaxInOptional,
    const aclTensor *attentionInOptional,
    const aclIntArray *prefixOptional,
    const aclIntArray *qStartIdxOptional,
    const aclIntArray *kvStartIdxOptional,
    double scaleValue,
    double keepProb,
    int64_t preTokens,
    int64_t nextTokens,
    int64_t headNum,
    char *inputLayout,
    int64_t innerPrecise,
    int64_t sparseMode,
    int64_t pseType,
    const aclTensor *dqOut,
    const aclTensor *dkOut,
    const aclTensor *dvOut,
    const aclTensor *dpseOut,
    uint64_t *workspaceSize,
    aclOpExecutor **executor);

/* Phase 2: runs the executor on the stream. */
ACLNN_API aclnnStatus aclnnFlashAttentionScoreGradV2(
    void *workspace,
    uint64_t workspaceSize,
    aclOpExecutor *executor,
    aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // OP_API_INC_FLASH_ATTENTION_SCORE_GRAD_H_
