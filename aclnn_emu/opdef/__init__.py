"""The operator framework: declarative C signatures (signature.py), argument reading (arguments.py),
the two phases (calls.py), the checks opbuild generates (generated.py), declared gaps (gaps.py),
output views (outputs.py) and the registry of operator packages (registry.py). The operators
themselves live in aclnn_emu/ops/<family>/<operator>/."""
