/* aclnn-emu: aclnn init/finalize. */
#ifndef ACLNN_BASE_H_
#define ACLNN_BASE_H_

#include <cstdint>
#include <cstdlib>
#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnInit(const char *configPath);
ACL_FUNC_VISIBILITY aclnnStatus aclnnFinalize();

#ifdef __cplusplus
}
#endif

#endif  // ACLNN_BASE_H_
