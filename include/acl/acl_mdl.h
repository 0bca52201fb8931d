/* aclnn-emu: model (aclmdl) API: not emulated; aclnn programs do not use it. Present because acl.h includes it. */
#ifndef INC_EXTERNAL_ACL_ACL_MDL_H_
#define INC_EXTERNAL_ACL_ACL_MDL_H_

#include "acl_base.h"

#endif  // INC_EXTERNAL_ACL_ACL_MDL_H_
