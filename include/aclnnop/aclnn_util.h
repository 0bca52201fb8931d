/* aclnn-emu: visibility macro used by operator headers. */
#ifndef OP_API_INC_ACLNN_UTIL_H_
#define OP_API_INC_ACLNN_UTIL_H_

#define ACLNN_API __attribute__((visibility("default")))

#endif
