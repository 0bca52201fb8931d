/* aclAppLog formats its message in C (varargs cannot cross into Python). */
extern "C" CFFI_DLLEXPORT void aclAppLog(aclLogLevel logLevel, const char *func, const char *file,
                                         uint32_t line, const char *fmt, ...) {
    char message[1024];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt ? fmt : "", args);
    va_end(args);
    if (aclemu_start() == 0) _py_aclAppLog(logLevel, func, file, line, message);
}
