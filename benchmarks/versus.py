"""One emulator call against its PyTorch counterpart: alternated timing, first-call peak RSS growth,
and the two goals (time ratio <= 1.0, emulator RSS growth <= 2x the inputs), printed."""

from interleaved import best_times
from rss import first_call_growth

MIB = 1 << 20


def compare(title: str, input_bytes: int, emulator, warm_up, pytorch, pytorch_label: str, rounds: int) -> None:
    """`emulator` = (call, release); `warm_up` = a small (call, release) run first, so one-time process
    costs (op modules, worker threads) stay out of the numbers; `pytorch` = its call."""
    tiny, release_tiny = warm_up
    tiny()
    release_tiny()
    emu, release = emulator
    emu_growth = first_call_growth(emu)
    torch_growth = first_call_growth(pytorch)
    best = best_times({"emu": emu, "torch": pytorch}, rounds)
    release()
    ratio = best["emu"] / best["torch"]
    print(f"{title}; inputs {input_bytes / MIB:.1f} MiB")
    print(
        f"{'aclnn-emu (aclnn_emu.run, both phases)':46s} {best['emu']:7.2f} s   first-call RSS growth "
        f"{emu_growth / MIB:7.1f} MiB"
    )
    print(f"{pytorch_label:46s} {best['torch']:7.2f} s   first-call RSS growth {torch_growth / MIB:7.1f} MiB")
    print(f"time emulator/PyTorch = {ratio:.2f}  (goal <= 1.0: {'met' if ratio <= 1.0 else 'MISSED'})")
    print(
        f"emulator RSS growth / inputs = {emu_growth / input_bytes:.2f}  "
        f"(goal <= 2.0: {'met' if emu_growth <= 2 * input_bytes else 'MISSED'})"
    )
