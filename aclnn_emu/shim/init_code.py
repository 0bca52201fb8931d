"""cffi embedding init code: runs inside libascendcl.so when the interpreter starts (build.py
reads this file as text; nothing imports it)."""
import os, site, sys
from _aclnn_emu_shim import ffi, lib
# The library sits in <package>/_toolkit/lib64/: make the directory holding the package importable
# (a venv's site-packages or a source checkout) before importing the emulator.
_lib = os.path.realpath(ffi.string(lib.aclemu_library_path()).decode())
_root = os.environ.get("ACLNN_EMU_PYTHONPATH") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(_lib))))
if _root not in sys.path:
    site.addsitedir(_root)
    sys.path.insert(0, _root)
from aclnn_emu.capi import bindings
bindings.attach(ffi, lib)
