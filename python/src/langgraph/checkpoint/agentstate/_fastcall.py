"""Calls across the WebAssembly boundary without wasmtime-py's per-call
type checks.

wasmtime-py's Func.__call__ and host-function trampoline look up the
function's type, box every argument in a Val and unbox every result, each
call: most of a crossing's cost, and a LangGraph turn makes dozens. The
engine's imports and exports have fixed signatures of i32 and f64, so
these use wasmtime's unchecked C calls (wasmtime_func_call_unchecked,
wasmtime_func_new_unchecked) with raw value slots instead. A Python
exception in a host function becomes a trap and is raised again, as
wasmtime-py does.
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable

import wasmtime
from wasmtime import _ffi as ffi

_last_exception: list[BaseException | None] = [None]

_TYPES = {"i": wasmtime.ValType.i32, "d": wasmtime.ValType.f64}


def _raise_trap(trap) -> None:
    exc = _last_exception[0]
    _last_exception[0] = None
    t = wasmtime.Trap._from_ptr(trap)
    if exc is not None:
        raise exc
    raise t


class Export:
    """An export called with i32 arguments, returning its one result
    (or None)."""

    __slots__ = ("_ctx", "_func", "_slots", "_n", "_kind")

    def __init__(self, store: wasmtime.Store, func: wasmtime.Func, nparams: int, result: str | None) -> None:
        self._ctx = store._context()
        self._func = ctypes.byref(func._func)
        self._n = max(nparams, 1 if result else 0)
        self._slots = (ffi.wasmtime_val_raw_t * max(self._n, 1))()
        self._kind = result

    def __call__(self, *args: int) -> Any:
        slots = self._slots
        for i, a in enumerate(args):
            slots[i].i32 = a
        trap = ctypes.POINTER(ffi.wasm_trap_t)()
        err = ffi.wasmtime_func_call_unchecked(self._ctx, self._func, slots, self._n, ctypes.byref(trap))
        if err:
            werr = wasmtime.WasmtimeError._from_ptr(err)
            # wasmtime may report a host function's trap as an error: the
            # Python exception behind it is raised, not left for the next.
            exc, _last_exception[0] = _last_exception[0], None
            raise exc if exc is not None else werr
        if trap:
            _raise_trap(trap)
        if self._kind == "i":
            return slots[0].i32
        if self._kind == "I":
            return slots[0].i64
        return None


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _no_finalizer(_env):  # pragma: no cover - called by wasmtime
    return None


def host_func(store: wasmtime.Store, params: str, results: str, fn: Callable[..., Any]) -> tuple[wasmtime.Func, Any]:
    """A host function of the given signature ("i" i32, "d" f64) calling
    fn with Python ints and floats (i32 as unsigned: they are pointers,
    lengths and ids). Returns the Func and the callback to keep alive."""
    kinds = tuple(params)
    ints = all(k == "i" for k in kinds)
    n = len(kinds)
    has_result = bool(results)

    def cb(_env, _caller, raw, _nraw):
        try:
            if ints:
                args = [raw[i].i32 & 0xFFFFFFFF for i in range(n)]
            else:
                args = [raw[i].i32 & 0xFFFFFFFF if k == "i" else raw[i].f64 for i, k in enumerate(kinds)]
            r = fn(*args)
            if has_result:
                raw[0].i32 = r
            return 0
        except BaseException as e:  # noqa: BLE001 - becomes a trap, raised again after the call
            _last_exception[0] = e
            trap = wasmtime.Trap("python exception")._consume()
            return ctypes.cast(trap, ctypes.c_void_p).value

    c_cb = ffi.wasmtime_func_unchecked_callback_t(cb)
    ty = wasmtime.FuncType([_TYPES[k]() for k in kinds], [_TYPES[k]() for k in results])
    raw = ffi.wasmtime_func_t()
    ffi.wasmtime_func_new_unchecked(store._context(), ty.ptr(), c_cb, None, _no_finalizer, ctypes.byref(raw))
    return wasmtime.Func._from_raw(raw), (c_cb, ty)
