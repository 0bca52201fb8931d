"""setuptools hooks: `pip install .` and `pip install -e .` build the toolkit (aclnn_emu/shim/build.py)
into aclnn_emu/_toolkit (lib64/libascendcl.so and its aliases, include/, set_env.sh) and the kernels'
compiled loops, aclnn_emu.kernels._native (aclnn_emu/shim/native.py)."""

import os
import sys
import pathlib

from setuptools import Command, setup
from setuptools.command.build import build

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


class BuildToolkit(Command):
    """A build sub-command (PEP 660 aware: editable installs build into the source tree)."""

    description = "build the aclnn-emu CANN toolkit (libascendcl.so, headers, set_env.sh)"
    user_options = []

    def initialize_options(self):
        self.build_lib = None
        self.editable_mode = False

    def finalize_options(self):
        self.set_undefined_options("build_py", ("build_lib", "build_lib"))

    def _target(self) -> pathlib.Path:
        base = HERE if self.editable_mode else pathlib.Path(self.build_lib)
        return base / "aclnn_emu" / "_toolkit"

    def run(self):
        from aclnn_emu.shim.build import build as build_toolkit

        build_toolkit(self._target())

    def get_outputs(self):
        target = self._target()
        return [str(p) for p in target.rglob("*") if p.is_file()] if target.exists() else []

    def get_output_mapping(self):
        return {}

    def get_source_files(self):
        from aclnn_emu.shim.build import SAMPLE_FILES, SOURCE_SAMPLES

        samples = [p for pattern in SAMPLE_FILES for p in SOURCE_SAMPLES.glob(pattern)]
        return (
            [str(p.relative_to(HERE)) for p in (HERE / "include").rglob("*.h")]
            + [str(p.relative_to(HERE)) for p in (HERE / "aclnn_emu" / "shim").iterdir() if p.suffix in (".py", ".cpp")]
            + [str(p.relative_to(HERE)) for p in samples]
        )


build.sub_commands.append(("build_toolkit", None))
os.chdir(HERE)
setup(cmdclass={"build_toolkit": BuildToolkit}, cffi_modules=["aclnn_emu/shim/native.py:ffi"])
