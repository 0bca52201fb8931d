"""Where the built toolkit lives, how to compile a program against it, and how to redo the install."""

import json
import os
import pathlib
import shlex
import subprocess

from . import config, process

HOME = pathlib.Path(__file__).resolve().parent / "_toolkit"
LIBRARY = HOME / "lib64" / "libascendcl.so"
# The spec's C++ samples, shipped with the toolkit as a CANN toolkit ships its samples.
SAMPLES = HOME / "samples"
# The flags of the official "compile and run a sample" recipe (c++11, -O2 -Wall, the three include
# directories, the runtime/meta/op libraries).
CXXFLAGS = ["-std=c++11", "-fPIC", "-O2", "-Wall"]
LIBS = ["-lascendcl", "-lnnopbase", "-lopapi_math", "-lopapi_transformer"]


def environment(base=None) -> dict:
    """The variables set_env.sh exports, applied to `base` (default: os.environ)."""
    env = dict(os.environ if base is None else base)
    env.update(
        ASCEND_HOME_PATH=str(HOME),
        ASCEND_TOOLKIT_HOME=str(HOME),
        ASCEND_CUSTOM_PATH=str(HOME),
        ASCEND_OPP_PATH=str(HOME / "opp"),
    )
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(HOME / "lib64"), env.get("LD_LIBRARY_PATH")]))
    said = config.said_before()
    if said:
        env[config.SAID_VARIABLE] = "\n".join(sorted(said))
    return env


def exports() -> str:
    """Shell lines for `eval "$(aclnn-emu env)"`."""
    env = environment({"LD_LIBRARY_PATH": os.environ.get("LD_LIBRARY_PATH", "")})
    keys = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_CUSTOM_PATH", "ASCEND_OPP_PATH", "LD_LIBRARY_PATH")
    return "\n".join(f"export {k}={shlex.quote(env[k])}" for k in keys)


def compile_command(source, output) -> list[str]:
    inc = HOME / "include"
    return [
        "g++",
        *CXXFLAGS,
        f"-I{inc}",
        f"-I{inc / 'aclnn'}",
        f"-I{inc / 'aclnnop'}",
        str(source),
        "-o",
        str(output),
        f"-L{HOME / 'lib64'}",
        *LIBS,
        "-lpthread",
    ]


def compile(source, output) -> subprocess.CompletedProcess:
    # Through process.run: a stop signal reaches the compiler too, so none outlives `aclnn-emu run`.
    return process.run(compile_command(source, output), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def reinstall_command() -> str:
    """The pip command that redoes this install, toolkit and compiled kernel loops alike: from where pip
    recorded it came from (PEP 610's direct_url.json), editable again if it was editable."""
    # Imported here: importlib.metadata costs every process that starts the emulator tens of ms.
    import importlib.metadata
    import urllib.parse

    # A checkout's own build metadata (aclnn_emu.egg-info, seen first from the checkout) has no record.
    records = (d.read_text("direct_url.json") for d in importlib.metadata.distributions(name="aclnn-emu"))
    origin = json.loads(next(filter(None, records), "{}"))
    url = urllib.parse.urlparse(origin.get("url", ""))
    source = urllib.parse.unquote(url.path) if url.scheme == "file" else (url.geturl() or "aclnn-emu")
    if origin.get("dir_info", {}).get("editable"):
        return f"pip install -e {shlex.quote(source)}"
    return f"pip install --force-reinstall --no-deps {shlex.quote(source)}"
