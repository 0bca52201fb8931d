"""Running a user's program for the `aclnn-emu` command: a timeout, and clean stops on signals.

A command wrapped in `stoppable` turns SIGINT, SIGTERM and SIGHUP into a `Stopped` exception, so its
`with` blocks remove what they made and `run` passes the signal on to the program it runs; then
the command dies of that same signal, so a calling shell or CI sees what it sent (130 for Ctrl-C).
A reader of its output that goes away (`aclnn-emu samples --full | head`) ends it as SIGPIPE would.
"""

import contextlib
import functools
import os
import signal
import subprocess
import sys

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
STOP_GRACE = 5  # seconds a program gets to exit after the signal we pass on, before SIGKILL
_held = None  # a list while a program starts: a stop signal waits there until it can be passed on


class Stopped(BaseException):
    """A stop signal, raised in the main thread (BaseException: no `except Exception` swallows it)."""

    def __init__(self, signum: int):
        super().__init__(signal_name(signum))
        self.signum = signum


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:  # a real-time signal has no name
        return f"signal {signum}"


def _raise_once(signum, frame):
    # One stop is enough: the cleanup it starts must not be cut short by a second signal (the program
    # still gets SIGKILL after STOP_GRACE).
    for s in STOP_SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    if _held is None:
        raise Stopped(signum)
    _held.append(signum)


@contextlib.contextmanager
def _stops_held():
    """Yields `release`: until it is called a stop signal is kept, not raised; it raises the one kept.
    Raised inside Popen after the fork, or before the `try` that passes it on (a busy machine may run
    the program well before Popen returns), Stopped would leave the program running without us."""
    global _held
    _held = []

    def release():
        global _held
        held, _held = _held, None
        if held:
            raise Stopped(held[0])

    try:
        yield release
    finally:
        release()


def stoppable(command):
    """Wrap a `cmd_*(args) -> int` function as described in this module's docstring. A signal that was
    ignored when we started (nohup, a background job of a script) stays ignored."""

    @functools.wraps(command)
    def wrapper(args) -> int:
        previous = {s: signal.getsignal(s) for s in STOP_SIGNALS}
        for s, action in previous.items():
            if action != signal.SIG_IGN:
                signal.signal(s, _raise_once)
        try:
            return command(args)
        except (Stopped, BrokenPipeError) as stop:
            signum = getattr(stop, "signum", signal.SIGPIPE)
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except OSError:
                    pass
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return 128 + signum  # not reached: the default action of these signals ends us
        finally:
            for s, action in previous.items():
                signal.signal(s, action)

    return wrapper


def run(argv, env=None, timeout=None, **streams) -> subprocess.CompletedProcess:
    """subprocess.run, except that a program we stop (at its timeout, or when a signal stops us) first
    gets that signal (SIGTERM at the timeout) and STOP_GRACE seconds to exit, then SIGKILL."""
    with _stops_held() as release, subprocess.Popen(argv, env=env, **streams) as child:
        try:
            release()
            out, err = child.communicate(timeout=timeout)
        except BaseException as stop:
            child.send_signal(getattr(stop, "signum", signal.SIGTERM))
            try:
                child.wait(STOP_GRACE)
            except subprocess.TimeoutExpired:
                child.kill()
            raise
    return subprocess.CompletedProcess(argv, child.returncode, out, err)


def exit_status(returncode: int) -> int:
    """Our exit status for a program's: its own, or 128+N if signal N killed it (as a shell reports it)."""
    return 128 - returncode if returncode < 0 else returncode


def reported(returncode: int) -> bool:
    """Whether a shell would say how the program ended: it does not for Ctrl-C or a closed pipe."""
    return returncode < 0 and -returncode not in (signal.SIGINT, signal.SIGPIPE)


def describe(returncode: int) -> str:
    return f"killed by {signal_name(-returncode)}" if returncode < 0 else f"exit {returncode}"
