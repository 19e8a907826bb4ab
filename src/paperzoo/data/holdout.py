"""Test data that cannot be read before the final evaluation.

The rule (docs/verdicts.md, "Selection hygiene"): step sizes, step counts, restarts, early
stopping and training-time monitoring are chosen on validation data carved from the training set;
test data are read only for the final numbers. This module makes that checkable. ``guard(x)``
wraps test data so that any computation on them raises ``HoldoutAccessError`` unless it runs
inside a ``final_evaluation()`` block:

* a tensor becomes a ``HoldoutTensor`` (a ``torch.Tensor`` subclass). While locked, only data
  plumbing is allowed (shape and dtype queries, ``len``, indexing and slicing, ``.to()``,
  ``.float()``, ``.contiguous()``, ``.cpu()``, reshapes, ``torch.cat``/``stack``); it returns
  guarded tensors again. Everything that reads values (a model's forward pass, a comparison,
  ``.item()``, ``.numpy()``) raises. Inside ``final_evaluation()`` every operation runs normally
  and returns plain tensors;
* a ``Split`` gets its test half guarded (the training half stays plain);
* any other sequence (e.g. a tuple of bAbI graphs) becomes a ``HoldoutSequence``: ``len`` and
  slicing work while locked, item access and iteration raise.

Experiments call ``RunContext.holdout(x)`` where they load or generate their test data and wrap
their final evaluation in ``RunContext.final_evaluation()``; the guard is active only when
``RunContext.guard_test`` is set (the tests set it), so normal runs pay nothing.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, overload

import torch
from torch import Tensor

T = TypeVar("T")


class HoldoutAccessError(RuntimeError):
    """Test data were read outside ``final_evaluation()``."""


_UNLOCKED: contextvars.ContextVar[int] = contextvars.ContextVar("holdout_unlocked", default=0)


@dataclass
class _Counters:
    guarded: int = 0  # objects wrapped by ``guard``
    final_reads: int = 0  # operations on guarded data inside ``final_evaluation()``


_COUNTS = _Counters()


@dataclass(frozen=True)
class HoldoutStats:
    """Process-wide counters (tests use them to check that an experiment guarded its data)."""

    guarded: int  # objects wrapped by ``guard`` so far
    final_reads: int  # operations on guarded data run inside ``final_evaluation()`` so far


def stats() -> HoldoutStats:
    """The counters so far; compare two snapshots to see what a run did."""
    return HoldoutStats(_COUNTS.guarded, _COUNTS.final_reads)


def is_unlocked() -> bool:
    """Whether the caller is inside a ``final_evaluation()`` block."""
    return _UNLOCKED.get() > 0


@contextlib.contextmanager
def final_evaluation() -> Iterator[None]:
    """The block where test data may be read: the final numbers, after every choice is made.

    Blocks nest; guarded data are locked again when the outermost block exits.
    """
    token = _UNLOCKED.set(_UNLOCKED.get() + 1)
    try:
        yield
    finally:
        _UNLOCKED.reset(token)


def _error(what: str, name: str) -> HoldoutAccessError:
    return HoldoutAccessError(
        f"test data touched before the final evaluation ({what} on {name}); select and monitor "
        "on validation data, and read test data only inside RunContext.final_evaluation()"
    )


# Operations that move, view or reshape data without reading values: allowed while locked.
_STRUCTURAL = frozenset(
    {
        # queries
        "__get__",  # attribute getters: shape, dtype, device, ndim, requires_grad, ...
        "__len__",
        "__hash__",
        "dim",
        "ndimension",
        "size",
        "numel",
        "nelement",
        "element_size",
        "stride",
        "storage_offset",
        "is_contiguous",
        "is_floating_point",
        "is_complex",
        "get_device",
        # moves and casts
        "to",
        "cpu",
        "cuda",
        "float",
        "double",
        "half",
        "bfloat16",
        "long",
        "int",
        "contiguous",
        "pin_memory",
        "detach",
        "clone",
        # indexing, views and reshapes
        "__getitem__",
        "narrow",
        "select",
        "index_select",
        "view",
        "view_as",
        "reshape",
        "reshape_as",
        "flatten",
        "unflatten",
        "squeeze",
        "unsqueeze",
        "permute",
        "transpose",
        "t",
        "movedim",
        "moveaxis",
        "expand",
        "expand_as",
        "chunk",
        "split",
        "tensor_split",
        "unbind",
        "cat",
        "concat",
        "concatenate",
        "stack",
    }
)


def _first_name(args: Any) -> str:
    for a in args:
        if isinstance(a, HoldoutTensor):
            return a._holdout_name
        if isinstance(a, list | tuple):
            for b in a:
                if isinstance(b, HoldoutTensor):
                    return b._holdout_name
    return "test data"


def _rewrap(ret: Any, name: str) -> Any:
    if isinstance(ret, Tensor):
        out = ret if isinstance(ret, HoldoutTensor) else ret.as_subclass(HoldoutTensor)
        out._holdout_name = name
        return out
    if isinstance(ret, tuple | list):
        return type(ret)(_rewrap(r, name) for r in ret)
    return ret


class HoldoutTensor(Tensor):
    """A test tensor that raises ``HoldoutAccessError`` when computed on outside
    ``final_evaluation()`` (structural operations excepted; see the module doc)."""

    _holdout_name: str = "test data"

    @classmethod
    def __torch_function__(
        cls,
        func: Callable[..., Any],
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        if is_unlocked():
            _COUNTS.final_reads += 1
            with torch._C.DisableTorchFunctionSubclass():
                return func(*args, **kwargs)  # plain tensors out
        op = getattr(func, "__name__", repr(func))
        name = _first_name(args)
        if op not in _STRUCTURAL:
            raise _error(f"{getattr(func, '__qualname__', op)}", name)
        with torch._C.DisableTorchFunctionSubclass():
            ret = func(*args, **kwargs)
        return _rewrap(ret, name)

    def __repr__(self, *, tensor_contents: Any = None) -> str:  # never reads the values
        with torch._C.DisableTorchFunctionSubclass():
            shape, dtype = tuple(self.shape), self.dtype
        return f"HoldoutTensor({self._holdout_name}, shape={shape}, dtype={dtype})"

    def __deepcopy__(self, memo: dict[int, Any]) -> HoldoutTensor:
        with torch._C.DisableTorchFunctionSubclass():
            copy = Tensor.clone(self)
        return _rewrap(copy, self._holdout_name)


class HoldoutSequence(Sequence[T]):
    """A sequence of test items (e.g. graphs): ``len`` and slicing while locked, nothing else."""

    def __init__(self, items: Sequence[T], name: str = "test data") -> None:
        self._items = items
        self._name = name

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, i: int) -> T: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[T]: ...

    def __getitem__(self, i: int | slice) -> T | Sequence[T]:
        if isinstance(i, slice):
            part = self._items[i]
            return part if is_unlocked() else HoldoutSequence(part, self._name)
        self._check("item access")
        return self._items[i]

    def __iter__(self) -> Iterator[T]:
        self._check("iteration")
        return iter(self._items)

    def __contains__(self, item: object) -> bool:
        self._check("membership test")
        return item in self._items

    def __reversed__(self) -> Iterator[T]:
        self._check("iteration")
        return reversed(self._items)

    def __repr__(self) -> str:
        return f"HoldoutSequence({self._name}, len={len(self._items)})"

    def _check(self, what: str) -> None:
        if not is_unlocked():
            raise _error(what, self._name)
        _COUNTS.final_reads += 1


def _has_test_half(data: object) -> bool:
    """Whether ``data`` is a dataclass instance with ``x_test`` and ``y_test`` fields (a
    ``paperzoo.data.Split``): matched by its fields, so this module stays below ``data.base``."""
    if not dataclasses.is_dataclass(data) or isinstance(data, type):
        return False
    return {"x_test", "y_test"} <= {f.name for f in dataclasses.fields(data)}


def guard(data: T, name: str = "test data") -> T:
    """``data`` wrapped so that reading it outside ``final_evaluation()`` raises.

    Args:
        data: a tensor, a ``Split`` (its test half is guarded) or a sequence of test items.
        name: how error messages call the data (e.g. ``"x_test"``).

    Returns:
        A ``HoldoutTensor``, a ``Split`` with guarded ``x_test`` / ``y_test``, or a
        ``HoldoutSequence``; data already guarded are returned as they are.
    """
    if isinstance(data, HoldoutTensor | HoldoutSequence):
        return data
    _COUNTS.guarded += 1
    if isinstance(data, Tensor):
        return _rewrap(data.detach(), name)  # type: ignore[return-value]
    if _has_test_half(data):
        return dataclasses.replace(  # type: ignore[return-value]
            data,
            x_test=guard(data.x_test, f"{name}: x_test"),
            y_test=guard(data.y_test, f"{name}: y_test"),
        )
    if isinstance(data, Sequence) and not isinstance(data, str | bytes):
        return HoldoutSequence(data, name)  # type: ignore[return-value]
    raise TypeError(f"cannot guard {type(data).__name__}: pass tensors, a Split or a sequence")


__all__ = [
    "HoldoutAccessError",
    "HoldoutSequence",
    "HoldoutStats",
    "HoldoutTensor",
    "final_evaluation",
    "guard",
    "is_unlocked",
    "stats",
]
