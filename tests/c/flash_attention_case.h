// Helpers of the FlashAttentionScore status-code programs (forward and backward): tensor shapes
// per layout and host bytes of one value in any of the dtypes they use.
#ifndef ACLNN_EMU_TEST_FLASH_ATTENTION_CASE_H_
#define ACLNN_EMU_TEST_FLASH_ATTENTION_CASE_H_

#include <cstring>
#include <string>
#include <vector>

#include "common.h"

using Shape = std::vector<int64_t>;

inline Shape LayoutShape(const std::string &layout, int64_t b, int64_t n, int64_t s, int64_t d) {
    if (layout == "BSH") return {b, s, n * d};
    if (layout == "SBH") return {s, b, n * d};
    if (layout == "BSND") return {b, s, n, d};
    if (layout == "TND") return {b * s, n, d};
    return {b, n, s, d};
}

// The 4-D attenMask rules both TND programs report for `entry` (batches 16x24 and 24x24, N1 = 2, sparse
// mode 1): the three shapes that run, a wrong head count and a wrong row count. `report(rule, edit)`.
template <class Cfg, class Report>
void ReportTndMasks(const std::string &entry, Report &report) {
    auto mask = [entry](Cfg &c, Shape shape) { c.entry = entry; c.hasMask = true; c.sparse = 1; c.mask = shape; };
    report(entry + ".ok.mask_one", [&](Cfg &c) { mask(c, {1, 1, 24, 24}); c.run = true; });
    report(entry + ".ok.mask_per_batch", [&](Cfg &c) { mask(c, {2, 1, 24, 24}); c.run = true; });
    report(entry + ".ok.mask_per_head", [&](Cfg &c) { mask(c, {2, 2, 24, 24}); c.run = true; });
    report(entry + ".mask.heads", [&](Cfg &c) { mask(c, {2, 3, 24, 24}); });
    report(entry + ".mask.rows", [&](Cfg &c) { mask(c, {2, 1, 16, 24}); });
}

inline std::vector<uint8_t> Bytes(const Shape &shape, aclDataType dt, float value) {
    size_t count = ShapeSize(shape);
    std::vector<uint8_t> host(count * aclDataTypeSize(dt) + 1, 0);
    for (size_t i = 0; i < count; i++) {
        if (dt == ACL_FLOAT) {
            std::memcpy(host.data() + 4 * i, &value, 4);
        } else if (dt == ACL_FLOAT16) {
            uint16_t half = aclFloatToFloat16(value);
            std::memcpy(host.data() + 2 * i, &half, 2);
        } else if (dt == ACL_BF16) {
            uint32_t bits;
            std::memcpy(&bits, &value, 4);
            uint16_t top = static_cast<uint16_t>(bits >> 16);
            std::memcpy(host.data() + 2 * i, &top, 2);
        } else if (dt == ACL_UINT8 || dt == ACL_BOOL) {
            host[i] = static_cast<uint8_t>(value);
        }
    }
    return host;
}

#endif  // ACLNN_EMU_TEST_FLASH_ATTENTION_CASE_H_
