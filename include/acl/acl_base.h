/* aclnn-emu: AscendCL base header: the runtime's base types, the model base types and the status codes. */
#ifndef INC_EXTERNAL_ACL_ACL_BASE_H_
#define INC_EXTERNAL_ACL_ACL_BASE_H_

#include <stdint.h>
#include <stddef.h>
#include "acl_base_rt.h"
#include "acl_base_mdl.h"
#include "error_codes/rt_error_codes.h"
#include "error_codes/ge_error_codes.h"

typedef struct aclTensorDesc aclTensorDesc;

#endif  // INC_EXTERNAL_ACL_ACL_BASE_H_
