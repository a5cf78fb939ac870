"""Protobuf messages to plain Python values, the one conversion the client uses.

Rules (the same for every message the client returns):

- Keys are the .proto field names (``error_message``, ``step_id``), as the
  ``toolexec`` CLI prints them. Scalar fields are always present (their default
  when unset); message fields only when set (a success has no ``exception``);
  of a oneof, only the member that is set.
- Enums are their value names (``"RESULT_STATUS_SUCCESS"``); int64 and uint64
  are ``int`` (not the strings of proto JSON); bytes stay ``bytes``;
  ``google.protobuf.Duration`` is a ``float`` of seconds.
- ``Struct``/``Value``/``ListValue`` become dicts, lists, str, bool and None.
  Their numbers are doubles on the wire, so a number with no fractional part
  and at most 2**53 in magnitude (exactly representable) comes back as ``int``,
  any other as ``float``: ``22.0`` reads as ``22``, ``0.5`` stays ``0.5``.
"""

from google.protobuf.descriptor import FieldDescriptor

_EXACT_INT_LIMIT = 2 ** 53


def number_to_py(n):
    if n.is_integer() and abs(n) <= _EXACT_INT_LIMIT:
        return int(n)
    return n


def value_to_py(value):
    kind = value.WhichOneof("kind")
    if kind == "number_value":
        return number_to_py(value.number_value)
    if kind == "string_value":
        return value.string_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "struct_value":
        return struct_to_py(value.struct_value)
    if kind == "list_value":
        return [value_to_py(v) for v in value.list_value.values]
    return None  # null_value, or nothing set


def struct_to_py(struct):
    return {k: value_to_py(v) for k, v in struct.fields.items()}


def _duration_to_py(d):
    return d.seconds + d.nanos / 1e9


_WELL_KNOWN = {
    "google.protobuf.Struct": struct_to_py,
    "google.protobuf.Value": value_to_py,
    "google.protobuf.ListValue": lambda lv: [value_to_py(v) for v in lv.values],
    "google.protobuf.Duration": _duration_to_py,
    # RFC 3339 in UTC, as proto JSON writes it: "2026-12-06T05:00:00.123Z".
    "google.protobuf.Timestamp": lambda t: t.ToJsonString(),
}


def _scalar(field, v):
    if field.type == FieldDescriptor.TYPE_ENUM:
        ev = field.enum_type.values_by_number.get(v)
        return ev.name if ev is not None else v
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return message_to_py(v)
    return v


def message_to_py(msg):
    """Any message (or well-known type) as plain Python values, per the rules above."""
    special = _WELL_KNOWN.get(msg.DESCRIPTOR.full_name)
    if special is not None:
        return special(msg)
    out = {}
    for field in msg.DESCRIPTOR.fields:
        name = field.name
        value = getattr(msg, name)
        if field.label == FieldDescriptor.LABEL_REPEATED:
            if field.message_type is not None and field.message_type.GetOptions().map_entry:
                vf = field.message_type.fields_by_name["value"]
                out[name] = {k: _scalar(vf, v) for k, v in value.items()}
            else:
                out[name] = [_scalar(field, v) for v in value]
        elif field.message_type is not None or field.containing_oneof is not None:
            if msg.HasField(name):
                out[name] = _scalar(field, value)
        else:
            out[name] = _scalar(field, value)
    return out
