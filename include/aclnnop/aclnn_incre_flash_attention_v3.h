/* aclnn-emu: aclnnIncreFlashAttentionV3GetWorkspaceSize / aclnnIncreFlashAttentionV3 (two-phase interface). */
#ifndef OP_API_INC_INCRE_FLASH_ATTENTION_V3_H_
#define OP_API_INC_INCRE_FLASH_ATTENTION_V3_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Phase 1: checks the arguments and returns the workspace size and an executor. */
ACLNN_API aclnnStatus aclnnIncreFlashAttentionV3GetWorkspaceSize(
    const aclTensor *query,
    const aclTensorList *key,
    const aclTensorList *value,
    const aclTensor *pseShift,
    const aclTensor *attenMask,
    const aclIntArray *actualSeqLengths,
    const aclTensor *dequantScale1,
    const aclTensor *quantScale1,
    const aclTensor *dequantScale2,
    const aclTensor *quantScale2,
    const aclTensor *quantOffset2,
    const aclTensor *antiquantScale,
    const aclTensor *antiquantOffset,
    const aclTensor *blocktable,
    int64_t numHeads,
    double scaleValue,
    char *inputLayout,
    int64_t numKeyValueHeads,
    int64_t blockSize,
    int64_t innerPrecise,
    const aclTensor *attentionOut,
    uint64_t *workspaceSize,
    aclOpExecutor **executor);

/* Phase 2: runs the executor on the stream. */
ACLNN_API aclnnStatus aclnnIncreFlashAttentionV3(
    void *workspace,
    uint64_t workspaceSize,
    aclOpExecutor *executor,
    aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // OP_API_INC_INCRE_FLASH_ATTENTION_V3_H_
