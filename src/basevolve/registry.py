"""One registry type for every named thing (tasks, protocols, allocators, models, backends).

docs/design.md, style rule 3: no ``if name == ...`` chains.  A registry maps a name to an
object (usually a class or a factory), refuses duplicate names, and answers unknown
names with a :class:`~basevolve.errors.ConfigError` that lists the known ones.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from basevolve.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """A name -> object mapping with clear errors.

    ``kind`` is used in messages ("unknown allocator 'ucbb'; known: ...").
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str, obj: T) -> T:
        """Add ``obj`` under ``name``; a duplicate or empty name is a ConfigError."""
        if not name or not isinstance(name, str):
            raise ConfigError(f"{self.kind} name must be a non-empty string, got {name!r}")
        if name in self._items:
            raise ConfigError(f"{self.kind} {name!r} is already registered")
        self._items[name] = obj
        return obj

    def decorator(self, name: str) -> Callable[[T], T]:
        """Use as ``@REGISTRY.decorator("name")`` on a class or function."""

        def wrap(obj: T) -> T:
            return self.register(name, obj)

        return wrap

    def get(self, name: str) -> T:
        """The object named ``name``; an unknown name is a ConfigError listing the known ones."""
        try:
            return self._items[name]
        except KeyError:
            known = ", ".join(sorted(self._items)) or "(none)"
            raise ConfigError(f"unknown {self.kind} {name!r}; known: {known}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._items)

    def items(self) -> list[tuple[str, T]]:
        """(name, object) pairs, sorted by name."""
        return sorted(self._items.items())

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._items)
