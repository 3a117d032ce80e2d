"""Kafka's default error messages: the text `Errors.<CODE>.message()` returns.

Kafka sends these where a response carries an error message but the broker
had nothing more specific to say (an error answered for the request as a
whole, FindCoordinator before v4, ...), and clients show them to users, so
they are part of the contract. kio generates its ErrorCode enum from Kafka's
Errors.java and keeps each message as the docstring of its member; those
docstrings are read here from kio's source file instead of being copied, the first
time a message is asked for, without importing the module (its import pulls in kio's
primitives, which a broker whose clients' requests all have hand-written codecs
never loads: a FindCoordinator answered COORDINATOR_NOT_AVAILABLE before v4 carries
a message).
"""

from __future__ import annotations

import ast
import functools
import gc
import importlib.util


@functools.cache
def _messages() -> dict[int, str]:
    # The module's source through the import system, as inspect.getsource reads it, without
    # running the module (finding it imports only the packages kio and kio.schema).
    spec = importlib.util.find_spec("kio.schema.errors")
    loader = None if spec is None else spec.loader
    source = None if loader is None else loader.get_source("kio.schema.errors")  # type: ignore[attr-defined]
    if source is None:
        raise ImportError("the source of kio.schema.errors is not installed")

    # No cyclic GC while the tree is built. On CPython 3.11 the AST constructor keeps one depth
    # counter per interpreter: a finalizer that a collection runs in the middle of it, and that
    # parses source too, makes this parse fail with "SystemError: AST constructor recursion
    # depth mismatch". Seen here: asyncio's "Future exception was never retrieved" log, whose
    # traceback formatting parses each line to place its carets.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        tree = ast.parse(source)
    finally:
        if gc_was_enabled:
            gc.enable()
    (enum_class,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ErrorCode"]
    out: dict[int, str] = {}
    body = enum_class.body
    for node, following in zip(body, body[1:]):
        # `name = code, retriable` followed by its docstring.
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple)
                and isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)):
            code = ast.literal_eval(node.value.elts[0])
            out[int(code)] = following.value.value
    return out


def default_message(code: int) -> str | None:
    """The message Kafka's Errors enum gives `code`: None for NONE (Kafka's is null)."""
    if code == 0:
        return None
    return _messages().get(int(code))


def message_or_name(code: int, name: str) -> str:
    """`Errors.message()`: the default message, or the constant's name when it has none
    (NONE reads "NONE" where Kafka writes error.message() into a response)."""
    return default_message(code) or name
