// For tests/test_cli.py: a sample with 100 lines of output ("line 1" ... "line 100") that passes.
#include <cstdio>

int main() {
    for (int i = 1; i <= 100; ++i) printf("line %d\n", i);
    return 0;
}
