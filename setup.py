"""The C extensions: the per-record loops of wire/, its receive buffers, and the cleaner's
offset map.

Everything else is declared in pyproject.toml; setuptools needs this file only to
know about extension modules. `pip install -e .` compiles them with the machine's gcc.
"""
from setuptools import Extension, setup

_FLAGS = ["-O3", "-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers"]

setup(
    ext_modules=[
        Extension("wire._record_walker", ["wire/_record_walker.c"], extra_compile_args=_FLAGS),
        Extension("wire._receive_buffer", ["wire/_receive_buffer.c"], extra_compile_args=_FLAGS),
        Extension("cleaner._offset_map", ["cleaner/_offset_map.c"], extra_compile_args=_FLAGS),
    ],
)
