"""A RedisJSON document (TYPE `ReJSON-RL`): its root value, and its RDB form, which is
RedisJSON's encoding version 3: the whole document as one compact JSON string, the one
string its rdb_save saves (the payload; the RDB writer frames it as a module string)."""

from __future__ import annotations

from typing import Any, ClassVar

from fakekey.modules.stack import JSON_MODULE
from fakekey.modules.stack.json_text import JsonError, dumps, parse
from fakekey.types.module_value import ModuleValue, register_module_type

IVALUE_BYTES = 8  # size_of::<IValue>(), what each value costs in JSON.DEBUG MEMORY


@register_module_type
class JsonValue(ModuleValue):
    TYPE_NAME: ClassVar[str] = "ReJSON-RL"
    ENCODING_VERSION: ClassVar[int] = 3
    MODULE_NAME: ClassVar[str] = JSON_MODULE
    MODULE_IO: ClassVar[bool] = False  # one string, RedisModule_SaveStringBuffer's

    __slots__ = ("root",)

    def __init__(self, root: Any) -> None:
        self.root = root

    def copy(self) -> JsonValue:
        return JsonValue(deep_copy(self.root))

    def payload(self) -> bytes:
        return dumps(self.root).encode("utf-8")

    @classmethod
    def from_payload(cls, data: bytes, encoding_version: int) -> JsonValue:
        if encoding_version not in (2, 3):  # 2: the same string (without RediSearch's fields)
            raise ValueError(f"ReJSON-RL: no reader for encoding version {encoding_version}")
        try:
            return cls(parse(data))
        except JsonError as exc:
            raise ValueError(f"ReJSON-RL: {exc}") from exc

    def memory_usage(self) -> int:
        return memory_of(self.root)


def deep_copy(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {key: deep_copy(item) for key, item in value.items()}
    if kind is list:
        return [deep_copy(item) for item in value]
    return value


def memory_of(value: Any) -> int:
    """JSON.DEBUG MEMORY's figure, as RedisJSON estimates its values (a container's
    capacity taken as its length)."""
    kind = type(value)
    if kind is dict:
        if not value:
            return IVALUE_BYTES
        return IVALUE_BYTES + 8 * (len(value) * 3 + 2) + sum(
            len(key.encode("utf-8")) + memory_of(item) for key, item in value.items())
    if kind is list:
        if not value:
            return IVALUE_BYTES
        return IVALUE_BYTES + 8 * (len(value) + 2) + sum(memory_of(item) for item in value)
    if kind is str:
        return IVALUE_BYTES + len(value.encode("utf-8"))
    if kind is float:
        return IVALUE_BYTES + 16
    if kind is int:
        if -128 <= value <= 383:
            return IVALUE_BYTES
        if -8_388_608 < value <= 8_388_607:
            return IVALUE_BYTES + 4
        return IVALUE_BYTES + 16
    return IVALUE_BYTES
