"""The C boundary: prototypes of every exported function and the bindings that convert C
arguments to Python objects. The only package that touches cffi pointers."""
