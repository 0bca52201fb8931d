"""Peak resident-memory growth of one call, for the benchmarks' memory goals."""


def rss_kib(field: str) -> int:
    """A /proc/self/status field (VmRSS, VmHWM) in KiB."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))


def first_call_growth(call) -> int:
    """Peak RSS growth in bytes during `call`: VmHWM after it minus VmRSS before it, the high-water
    mark reset first (/proc/self/clear_refs)."""
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")
    before = rss_kib("VmRSS")
    call()
    return (rss_kib("VmHWM") - before) * 1024
