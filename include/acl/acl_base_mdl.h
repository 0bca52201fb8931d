/* aclnn-emu: model (aclmdl) base types: none of them are used by the runtime or aclnn API. */
#ifndef INC_EXTERNAL_ACL_ACL_BASE_MDL_H_
#define INC_EXTERNAL_ACL_ACL_BASE_MDL_H_

#endif  // INC_EXTERNAL_ACL_ACL_BASE_MDL_H_
