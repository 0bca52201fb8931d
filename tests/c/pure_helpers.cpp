// The pure helpers through the C ABI, in bulk: argv[1] holds float32 inputs; argv[2] receives
// aclFloat16ToFloat of all 65536 half values (float32 each), then aclFloatToFloat16 of every input
// (uint16 each), then aclDataTypeSize(-8 .. 63) (uint64 each). No aclInit: they need no runtime.
#include <cstdio>
#include <vector>

#include "acl/acl.h"

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    FILE *in = fopen(argv[1], "rb"), *out = fopen(argv[2], "wb");
    if (!in || !out) return 3;
    std::vector<float> inputs;
    float value;
    while (fread(&value, sizeof value, 1, in) == 1) inputs.push_back(value);
    for (uint32_t bits = 0; bits < 65536; bits++) {
        float widened = aclFloat16ToFloat(static_cast<aclFloat16>(bits));
        fwrite(&widened, sizeof widened, 1, out);
    }
    for (float x : inputs) {
        aclFloat16 narrowed = aclFloatToFloat16(x);
        fwrite(&narrowed, sizeof narrowed, 1, out);
    }
    for (int dt = -8; dt < 64; dt++) {
        uint64_t size = aclDataTypeSize(static_cast<aclDataType>(dt));
        fwrite(&size, sizeof size, 1, out);
    }
    return fclose(out) == 0 ? 0 : 4;
}
