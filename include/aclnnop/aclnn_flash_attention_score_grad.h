/* aclnn-emu: aclnnFlashAttentionScoreGrad V1-V3 and aclnnFlashAttentionUnpaddingScoreGrad V1-V5 (two-phase interfaces, as CANN 8.5 declares them). */
#ifndef OP_API_INC_FLASH_ATTENTION_SCORE_GRAD_H_
#define OP_API_INC_FLASH_ATTENTION_SCORE_GRAD_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Phase 1 of aclnnFlashAttentionScoreGrad: checks the arguments and returns the workspace size and an executor. */
ACLNN_API aclnnStatus aclnnFlashAttentionScoreGradGetWorkspaceSize(
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
    double scaleValue,
    double keepProb,
    int64_t preTokens,
    int64_t nextTokens,
    int64_t headNum,
    char *inputLayout,
    int64_t innerPrecise,
    int64_t sparseMode,
    const aclTensor *dqOut,
    const aclTensor *dkOut,
    const aclTensor *dvOut,
    const aclTensor *dpseOut,
    uint64_t *workspaceSize,
    aclOpExecutor **executor);

/* Phase 2 of aclnnFlashAttentionScoreGrad: runs the executor on the stream. */
ACLNN_API aclnnStatus aclnnFlashAttentionScoreGrad(
    void *workspace,
    uint64_t workspaceSize,
    aclOpExecutor *executor,
    aclrtStream stream);

/* Phase 1 of aclnnFlashAttentionUnpaddingScoreGrad: checks the arguments and returns the workspace size and an executor. */
ACLNN_API aclnnStatus aclnnFlashAttentionUnpaddingScoreGradGetWorkspaceSize(
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
    const aclIntArray *actualSeqQLenOptional,
    const aclIntArray *actualSeqKvLenOptional,
    double scaleValue,
    double keepProb,
    int64_t preTokens,
    int64_t nextTokens,
    int64_t headNum,
    char *inputLayout,
    int64_t innerPrecise,
    int64_t sparseMode,
    const aclTensor *dqOut,
    const aclTensor *dkOut,
    const aclTensor *dvOut,
    const aclTensor *dpseOut,
    uint64_t *workspaceSize,
    aclOpExecutor **executor);

/* Phase 2 of aclnnFlashAttentionUnpaddingScoreGrad: runs the executor on the stream. */
ACLNN_API aclnnStatus aclnnFlashAttentionUnpaddingScoreGrad(
    void *workspace,
    uint64_t workspaceSize,
    aclOpExecutor *executor,
    aclrtStream stream);

/* Phase 1 of aclnnFlashAttentionScoreGradV2: checks the arguments and returns the workspace size and an executor. */
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

/* Phase 2 of aclnnFlashAttentionScoreGradV2: runs the executor on the stream. */
ACLNN_API aclnnStatus aclnnFlashAttentionScoreGradV2(
    void *workspace,
    uint64_t workspaceSize,
    aclOpExecutor *executor,
    aclrtStream stream);

/* Phase 1 of aclnnFlashAttentionScoreGradV3: checks the arguments and returns the workspace size and an executor. */
ACLNN_API aclnnStatus aclnnFlashAttentionScoreGradV3GetWorkspaceSize(
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
    const aclTensor *sinkInOptional,
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
    const aclTensor *dsinkOut,
    uint64_t *workspaceSize,
    aclOpExecutor **executor);

/* Phase 2 of aclnnFlashAttentionScoreGradV3: runs the executor on the stream. */
ACLNN_API aclnnStatus aclnnFlashAttentionScoreGradV3(
    void *workspace,
    uint64_t workspaceSize,
    aclOpExecutor *executor,
    aclrtStream stream);

/* Phase 1 of aclnnFlashAttentionUnpaddingScoreGradV2: checks the arguments and returns the workspace size and an executor. */
ACLNN_API aclnnStatus aclnnFlashAttentionUnpaddingScoreGradV2GetWorkspaceSize(
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
    const aclIntArray *actualSeqQLenOptional,
    const aclIntArray *actualSeqKvLenOptional,
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

/* Phase 2 of aclnnFlashAttentionUnpaddingScoreGradV2: runs the executor on the stream. */
ACLNN_API aclnnStatus aclnnFlashAttentionUnpaddingScoreGradV2(
    void *workspace,
    uint64_t workspaceSize,
    aclOpExecutor *executor,
    aclrtStream stream);

/* Phase 1 of aclnnFlashAttentionUnpaddingScoreGradV3: checks the arguments and returns the workspace size and an executor. */
ACLNN_API aclnnStatus aclnnFlashAttentionUnpaddingScoreGradV3GetWorkspaceSize(
    const aclTensor *query,
    const aclTensor *queryRope,
    const aclTensor *keyIn,
    const aclTensor *keyInRope,
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
    const aclIntArray *actualSeqQLenOptional,
    const aclIntArray *actualSeqKvLenOptional,
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
    const aclTensor *dqRopeOut,
    const aclTensor *dkOut,
    const aclTensor *dkRopeOut,
    const aclTensor *dvOut,
    const aclTensor *dpseOut,
    uint64_t *workspaceSize,
    aclOpExecutor **executor);

/* Phase 2 of aclnnFlashAttentionUnpaddingScoreGradV3: runs the executor on the stream. */
ACLNN_API aclnnStatus aclnnFlashAttentionUnpaddingScoreGradV3(
    void *workspace,
    uint64_t workspaceSize,
    aclOpExecutor *executor,
    aclrtStream stream);

/* Phase 1 of aclnnFlashAttentionUnpaddingScoreGradV4: checks the arguments and returns the workspace size and an executor. */
ACLNN_API aclnnStatus aclnnFlashAttentionUnpaddingScoreGradV4GetWorkspaceSize(
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
    const aclIntArray *actualSeqQLenOptional,
    const aclIntArray *actualSeqKvLenOptional,
    double scaleValue,
    double keepProb,
    int64_t preTokens,
    int64_t nextTokens,
    int64_t headNum,
    char *inputLayout,
    int64_t innerPrecise,
    int64_t sparseMode,
    const aclTensor *dqOut,
    const aclTensor *dkOut,
    const aclTensor *dvOut,
    const aclTensor *dpseOut,
    char *softmaxInLayout,
    uint64_t *workspaceSize,
    aclOpExecutor **executor);

/* Phase 2 of aclnnFlashAttentionUnpaddingScoreGradV4: runs the executor on the stream. */
ACLNN_API aclnnStatus aclnnFlashAttentionUnpaddingScoreGradV4(
    void *workspace,
    uint64_t workspaceSize,
    aclOpExecutor *executor,
    aclrtStream stream);

/* Phase 1 of aclnnFlashAttentionUnpaddingScoreGradV5: checks the arguments and returns the workspace size and an executor. */
ACLNN_API aclnnStatus aclnnFlashAttentionUnpaddingScoreGradV5GetWorkspaceSize(
    const aclTensor *query,
    const aclTensor *queryRope,
    const aclTensor *keyIn,
    const aclTensor *keyInRope,
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
    const aclTensor *sinkInOptional,
    const aclIntArray *prefixOptional,
    const aclIntArray *actualSeqQLenOptional,
    const aclIntArray *actualSeqKvLenOptional,
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
    char *softmaxInLayout,
    const aclTensor *dqOut,
    const aclTensor *dqRopeOut,
    const aclTensor *dkOut,
    const aclTensor *dkRopeOut,
    const aclTensor *dvOut,
    const aclTensor *dpseOut,
    const aclTensor *dsinkOut,
    uint64_t *workspaceSize,
    aclOpExecutor **executor);

/* Phase 2 of aclnnFlashAttentionUnpaddingScoreGradV5: runs the executor on the stream. */
ACLNN_API aclnnStatus aclnnFlashAttentionUnpaddingScoreGradV5(
    void *workspace,
    uint64_t workspaceSize,
    aclOpExecutor *executor,
    aclrtStream stream);

/* Phase 1 of aclnnFlashAttentionScoreGradV4 (CANN 9.0.0 on; aclnn-emu refuses it under an 8.5 release): checks the
   arguments and returns the workspace size and an executor. */
ACLNN_API aclnnStatus aclnnFlashAttentionScoreGradV4GetWorkspaceSize(
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
    const aclTensor *sinkInOptional,
    const aclTensor *queryRopeOptional,
    const aclTensor *keyRopeOptional,
    const aclTensor *dScaleQOptional,
    const aclTensor *dScaleKOptional,
    const aclTensor *dScaleVOptional,
    const aclTensor *dScaleDyOptional,
    const aclTensor *dScaleOOptional,
    const aclIntArray *prefixOptional,
    const aclIntArray *actualSeqQLenOptional,
    const aclIntArray *actualSeqKvLenOptional,
    const aclIntArray *qStartIdxOptional,
    const aclIntArray *kvStartIdxOptional,
    double scaleValue,
    double keepProb,
    int64_t preTokens,
    int64_t nextTokens,
    int64_t headNum,
    char *inputLayout,
    char *softmaxInLayout,
    int64_t innerPrecise,
    int64_t sparseMode,
    int64_t pseType,
    int64_t seed,
    int64_t offset,
    int64_t outDtype,
    const aclTensor *dqOut,
    const aclTensor *dkOut,
    const aclTensor *dvOut,
    const aclTensor *dqRopeOut,
    const aclTensor *dkRopeOut,
    const aclTensor *dpseOut,
    const aclTensor *dsinkOut,
    uint64_t *workspaceSize,
    aclOpExecutor **executor);

/* Phase 2 of aclnnFlashAttentionScoreGradV4: runs the executor on the stream. */
ACLNN_API aclnnStatus aclnnFlashAttentionScoreGradV4(
    void *workspace,
    uint64_t workspaceSize,
    aclOpExecutor *executor,
    aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // OP_API_INC_FLASH_ATTENTION_SCORE_GRAD_H_
