// For tests/test_cli.py: writes to stdout and stderr in turn and waits for a line on stdin between
// its two steps, so a test sees what arrives while it runs. The line says how to end: "exit N" or
// "signal N". With the argument "ignore-sigterm" it ignores SIGTERM; stdin closed exits 99.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "ignore-sigterm") == 0) signal(SIGTERM, SIG_IGN);
    printf("out 1\n");
    fflush(stdout);
    fprintf(stderr, "err 1\n");
    char line[64];
    if (!fgets(line, sizeof line, stdin)) return 99;
    printf("out 2\n");
    fflush(stdout);
    fprintf(stderr, "err 2\n");
    if (strncmp(line, "signal ", 7) == 0) raise(atoi(line + 7));
    return strncmp(line, "exit ", 5) == 0 ? atoi(line + 5) : 98;
}
