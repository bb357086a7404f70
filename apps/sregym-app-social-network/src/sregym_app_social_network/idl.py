"""The Thrift interface (``social_network.thrift``) as Python classes for the ``thrift`` runtime.

The Apache Thrift compiler is not needed: what it would generate is a class per struct with a
``thrift_spec`` table, which the runtime's protocol code (``TProtocolBase.readStruct/writeStruct``
and the C accelerator) encodes and decodes. This module builds exactly those tables from a compact
description, so the bytes on the wire are plain Thrift binary protocol, readable by any Thrift
implementation given ``social_network.thrift``.

Every method, as in DeathStarBench, takes ``req_id`` first and a ``carrier`` map last (the trace
context, W3C ``traceparent``), and may raise ``ServiceException``.
"""

from __future__ import annotations

from typing import Any

from thrift.protocol.TBase import TBase, TExceptionBase
from thrift.Thrift import TType

I32, I64, STRING, BOOL = TType.I32, TType.I64, TType.STRING, TType.BOOL
CARRIER = (TType.MAP, (TType.STRING, "UTF8", TType.STRING, "UTF8", False))


def _spec(fields: list[tuple[int, str, Any]]) -> tuple:
    """A ``thrift_spec`` tuple indexed by field id from ``[(id, name, type), ...]``."""
    table: list[Any] = [None] * (max((f[0] for f in fields), default=0) + 1)
    for fid, name, ftype in fields:
        if isinstance(ftype, tuple):  # (ttype, type_args)
            table[fid] = (fid, ftype[0], name, ftype[1], None)
        elif isinstance(ftype, type):  # a struct class
            table[fid] = (fid, TType.STRUCT, name, [ftype, _struct_spec(ftype)], None)
        elif ftype == STRING:
            table[fid] = (fid, STRING, name, "UTF8", None)
        else:
            table[fid] = (fid, ftype, name, None, None)
    return tuple(table)


def _struct_spec(cls: Any) -> Any:
    """A struct class's ``thrift_spec`` (the classes are built at run time by :func:`struct`)."""
    return cls.thrift_spec


def list_of(element: Any) -> tuple:
    if isinstance(element, type):
        return (TType.LIST, (TType.STRUCT, [element, _struct_spec(element)], False))
    return (TType.LIST, (element, "UTF8" if element == STRING else None, False))


def struct(name: str, fields: list[tuple[int, str, Any]], base: type = TBase) -> Any:
    """A Thrift struct class with keyword constructor, equality and repr (TBase). (Typed Any: its
    fields exist only at run time.)"""
    names = tuple(f[1] for f in fields)

    def __init__(self: Any, **values: Any) -> None:
        unknown = set(values) - set(names)
        if unknown:
            raise TypeError(f"{name} has no field(s) {sorted(unknown)}")
        for field in names:
            setattr(self, field, values.get(field))

    namespace: dict[str, Any] = {"__slots__": names, "__init__": __init__, "thrift_spec": _spec(fields)}
    if base is TExceptionBase:
        namespace["__str__"] = lambda self: str(getattr(self, "message", ""))
        namespace["__hash__"] = object.__hash__
    return type(name, (base,), namespace)


# ErrorCode (DeathStarBench's enum)
SE_CONNPOOL_TIMEOUT, SE_THRIFT_CONN_ERROR, SE_UNAUTHORIZED, SE_MEMCACHED_ERROR = 0, 1, 2, 3
SE_MONGODB_ERROR, SE_REDIS_ERROR, SE_THRIFT_HANDLER_ERROR, SE_RABBITMQ_CONN_ERROR = 4, 5, 6, 7
ERROR_CODES = {0: "SE_CONNPOOL_TIMEOUT", 1: "SE_THRIFT_CONN_ERROR", 2: "SE_UNAUTHORIZED", 3: "SE_MEMCACHED_ERROR",
               4: "SE_DATABASE_ERROR", 5: "SE_REDIS_ERROR", 6: "SE_THRIFT_HANDLER_ERROR",
               7: "SE_RABBITMQ_CONN_ERROR", 8: "SE_NOT_FOUND"}
SE_NOT_FOUND = 8

ServiceException = struct("ServiceException", [(1, "errorCode", I32), (2, "message", STRING)], TExceptionBase)
User = struct("User", [(1, "user_id", I64), (2, "first_name", STRING), (3, "last_name", STRING),
                       (4, "username", STRING), (5, "password_hashed", STRING), (6, "salt", STRING)])
Media = struct("Media", [(1, "media_id", I64), (2, "media_type", STRING)])
Url = struct("Url", [(1, "shortened_url", STRING), (2, "expanded_url", STRING)])
UserMention = struct("UserMention", [(1, "user_id", I64), (2, "username", STRING)])
Creator = struct("Creator", [(1, "user_id", I64), (2, "username", STRING)])
# PostType: 0 POST, 1 REPOST, 2 REPLY, 3 DM
Post = struct("Post", [(1, "post_id", I64), (2, "creator", Creator), (3, "req_id", I64), (4, "text", STRING),
                       (5, "user_mentions", list_of(UserMention)), (6, "media", list_of(Media)),
                       (7, "urls", list_of(Url)), (8, "timestamp", I64), (9, "post_type", I32)])
TextServiceReturn = struct("TextServiceReturn", [(1, "text", STRING), (2, "user_mentions", list_of(UserMention)),
                                                 (3, "urls", list_of(Url))])

#: service -> method -> (argument fields after req_id and before carrier, return type or None for void)
SERVICES: dict[str, dict[str, tuple[list[tuple[str, Any]], Any]]] = {
    "UniqueIdService": {
        "ComposeUniqueId": ([("post_type", I32)], I64),
    },
    "TextService": {
        "ComposeText": ([("text", STRING)], TextServiceReturn),
    },
    "UserMentionService": {
        "ComposeUserMentions": ([("usernames", list_of(STRING))], list_of(UserMention)),
    },
    "UrlShortenService": {
        "ComposeUrls": ([("urls", list_of(STRING))], list_of(Url)),
        "GetExtendedUrls": ([("shortened_urls", list_of(STRING))], list_of(STRING)),
    },
    "MediaService": {
        "ComposeMedia": ([("media_types", list_of(STRING)), ("media_ids", list_of(I64))], list_of(Media)),
    },
    "UserService": {
        "RegisterUserWithId": ([("first_name", STRING), ("last_name", STRING), ("username", STRING),
                                ("password", STRING), ("user_id", I64)], None),
        "Login": ([("username", STRING), ("password", STRING)], STRING),
        "ComposeCreatorWithUserId": ([("user_id", I64), ("username", STRING)], Creator),
        "ComposeCreatorWithUsername": ([("username", STRING)], Creator),
        "GetUserId": ([("username", STRING)], I64),
    },
    "SocialGraphService": {
        "GetFollowers": ([("user_id", I64)], list_of(I64)),
        "GetFollowees": ([("user_id", I64)], list_of(I64)),
        "Follow": ([("user_id", I64), ("followee_id", I64)], None),
        "Unfollow": ([("user_id", I64), ("followee_id", I64)], None),
        "InsertUser": ([("user_id", I64)], None),
    },
    "PostStorageService": {
        "StorePost": ([("post", Post)], None),
        "ReadPost": ([("post_id", I64)], Post),
        "ReadPosts": ([("post_ids", list_of(I64))], list_of(Post)),
    },
    "UserTimelineService": {
        "WriteUserTimeline": ([("post_id", I64), ("user_id", I64), ("timestamp", I64)], None),
        "ReadUserTimeline": ([("user_id", I64), ("start", I32), ("stop", I32)], list_of(Post)),
    },
    "HomeTimelineService": {
        "WriteHomeTimeline": ([("post_id", I64), ("user_id", I64), ("timestamp", I64),
                               ("user_mentions_id", list_of(I64))], None),
        "ReadHomeTimeline": ([("user_id", I64), ("start", I32), ("stop", I32)], list_of(Post)),
    },
    "ComposePostService": {
        "ComposePost": ([("username", STRING), ("user_id", I64), ("text", STRING), ("media_ids", list_of(I64)),
                         ("media_types", list_of(STRING)), ("post_type", I32)], None),
    },
}


def _build_messages() -> dict[tuple[str, str], tuple[type, type]]:
    """(service, method) -> (args struct, result struct), named as the compiler names them."""
    out: dict[tuple[str, str], tuple[type, type]] = {}
    for service, methods in SERVICES.items():
        for method, (params, returns) in methods.items():
            fields = [(1, "req_id", I64)] + [(i + 2, n, t) for i, (n, t) in enumerate(params)]
            fields.append((len(fields) + 1, "carrier", CARRIER))
            args = struct(f"{method}_args", fields)
            result_fields: list[tuple[int, str, Any]] = [(1, "se", ServiceException)]
            if returns is not None:
                result_fields.insert(0, (0, "success", returns))
            result = struct(f"{method}_result", result_fields)
            out[(service, method)] = (args, result)
    return out


MESSAGES = _build_messages()


def arg_names(service: str, method: str) -> list[str]:
    return [name for name, _ in SERVICES[service][method][0]]


def has_result(service: str, method: str) -> bool:
    return SERVICES[service][method][1] is not None


def to_dict(value: Any) -> Any:
    """A struct (or list of them) as plain JSON-able data, for the HTTP gateway and logs."""
    if isinstance(value, TBase):
        return {name: to_dict(getattr(value, name)) for name in value.__slots__}
    if isinstance(value, (list, tuple)):
        return [to_dict(v) for v in value]
    return value


def _thrift_type(entry_type: int, args: Any) -> str:
    names = {I32: "i32", I64: "i64", STRING: "string", BOOL: "bool"}
    if entry_type == TType.STRUCT:
        return args[0].__name__
    if entry_type == TType.LIST:
        return f"list<{_thrift_type(args[0], args[1])}>"
    if entry_type == TType.MAP:
        return "map<string, string>"
    return names[entry_type]


def render_thrift() -> str:
    """``social_network.thrift``: the IDL these tables encode (a test keeps the shipped file in sync)."""
    out = ["// The Social Network's Thrift interface, as served by this package (binary protocol, framed transport).",
           "// Field ids and types match what idl.py encodes; every call carries req_id first and the trace",
           "// context (carrier) last, as in DeathStarBench. Generated by idl.render_thrift().",
           "namespace py social_network", "",
           "enum ErrorCode {\n" + ",\n".join(f"  {n} = {c}" for c, n in sorted(ERROR_CODES.items())) + "\n}", ""]
    for cls in (ServiceException, User, Media, Url, UserMention, Creator, Post, TextServiceReturn):
        kind = "exception" if cls is ServiceException else "struct"
        fields = [f"  {e[0]}: {_thrift_type(e[1], e[3])} {e[2]};" for e in cls.thrift_spec if e]
        out.append(f"{kind} {cls.__name__} {{\n" + "\n".join(fields) + "\n}\n")
    for service, methods in SERVICES.items():
        lines = []
        for method, (_params, returns) in methods.items():
            args_cls, result_cls = MESSAGES[(service, method)]
            args = ", ".join(f"{e[0]}: {_thrift_type(e[1], e[3])} {e[2]}" for e in _struct_spec(args_cls) if e)
            ret = "void" if returns is None else _thrift_type(_struct_spec(result_cls)[0][1], _struct_spec(result_cls)[0][3])
            lines.append(f"  {ret} {method}({args}) throws (1: ServiceException se)")
        out.append(f"service {service} {{\n" + "\n".join(lines) + "\n}\n")
    return "\n".join(out)
