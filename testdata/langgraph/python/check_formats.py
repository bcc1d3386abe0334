"""Checks FORMATS.md against the fixtures.

Reads the SqliteSaver file and the PostgresSaver database with nothing but
what FORMATS.md says (ormsgpack only for the msgpack framing; no LangGraph
code), maps every value to the expected-state JSON, rebuilds each
checkpoint's state (DeltaChannels by the ancestor walk) and compares it all
with the JSON that LangGraph itself wrote. It is, in Python, the reading an
importer has to do; generate.sh runs it after every regeneration.

    python check_formats.py --sqlite langgraph-py.sqlite --expected-sqlite expected-py-sqlite.json \
        [--postgres URL --expected-postgres expected-py-postgres.json]
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import sqlite3
import sys
from typing import Any

import ormsgpack


class Ext:
    __slots__ = ("code", "data")

    def __init__(self, code: int, data: Any) -> None:
        self.code, self.data = code, data


def unpack(b: bytes) -> Any:
    return ormsgpack.unpackb(b, ext_hook=lambda code, data: Ext(code, unpack(data)), option=ormsgpack.OPT_NON_STR_KEYS)


def loads_typed(type_: str, b: bytes | None) -> Any:
    if type_ == "null":
        return None
    if type_ == "bytes":
        return {"$type": "bytes", "b64": base64.b64encode(b).decode()}
    if type_ == "bytearray":
        return {"$type": "bytearray", "b64": base64.b64encode(b).decode()}
    if type_ == "msgpack":
        return js(unpack(b))
    raise ValueError(f"serde type {type_!r}")


def json_sort_key(x: Any) -> str:
    return json.dumps(x, sort_keys=True)


def js(v: Any) -> Any:
    """A decoded msgpack value in the expected-state JSON mapping."""
    if isinstance(v, Ext):
        return ext_js(v.code, v.data)
    if v is None or isinstance(v, (bool, str, int)):
        return v
    if isinstance(v, float):
        if math.isfinite(v):
            return v
        return {"$type": "float", "value": repr(v)}
    if isinstance(v, bytes):
        return {"$type": "bytes", "b64": base64.b64encode(v).decode()}
    if isinstance(v, list):
        return [js(x) for x in v]
    if isinstance(v, tuple):  # an array used as a map key
        return {"$type": "tuple", "items": [js(x) for x in v]}
    if isinstance(v, dict):
        if all(isinstance(k, str) for k in v) and "$type" not in v:
            return {k: js(x) for k, x in v.items()}
        return {"$type": "dict", "items": [[js(k), js(x)] for k, x in v.items()]}
    raise TypeError(f"unexpected msgpack value {v!r}")


def td_js(v: Any) -> dict:
    assert isinstance(v, Ext) and v.code == 1 and v.data[:2] == ["datetime", "timedelta"], v
    d, s, us = v.data[2]
    return {"$type": "timedelta", "days": d, "seconds": s, "microseconds": us}


def offset_iso(td: dict) -> str:
    total_us = (td["days"] * 86400 + td["seconds"]) * 1_000_000 + td["microseconds"]
    sign = "-" if total_us < 0 else "+"
    total_us = abs(total_us)
    hh, rest = divmod(total_us, 3_600_000_000)
    mm, rest = divmod(rest, 60_000_000)
    ss, us = divmod(rest, 1_000_000)
    out = f"{sign}{hh:02d}:{mm:02d}"
    if ss or us:
        out += f":{ss:02d}"
    if us:
        out += f".{us:06d}"
    return out


def f_to_c(buf: bytes, itemsize: int, shape: list[int]) -> bytes:
    n = math.prod(shape)
    out = bytearray(len(buf))
    for ci in range(n):
        rem, idx = ci, []
        for dim in reversed(shape):
            rem, i = divmod(rem, dim)
            idx.append(i)
        idx.reverse()
        fi, stride = 0, 1
        for i, dim in zip(idx, shape):
            fi += i * stride
            stride *= dim
        out[ci * itemsize : (ci + 1) * itemsize] = buf[fi * itemsize : (fi + 1) * itemsize]
    return bytes(out)


def ext_js(code: int, d: Any) -> Any:
    if code == 7:
        return {"$type": "delta_snapshot", "value": js(d)}
    if code == 6:
        dtype, shape, order, buf = d
        if order == "F":
            buf = f_to_c(buf, int(dtype[2:]), shape)
        return {"$type": "ndarray", "dtype": dtype, "shape": list(shape), "c_order_b64": base64.b64encode(buf).decode()}
    module, name, payload = d[0], d[1], d[2]
    cls = f"{module}.{name}"
    if code == 5:
        tag = "message" if module.startswith("langchain_core.messages.") else "pydantic"
        return {"$type": tag, "class": cls, "fields": js(payload)}
    if code == 4:
        return {"$type": "pydantic_v1", "class": cls, "fields": js(payload)}
    if code == 3:
        if (module, name, d[3]) == ("datetime", "datetime", "fromisoformat"):
            return {"$type": "datetime", "iso": payload}
        return js(payload)  # LangGraph refuses other methods and reads the argument
    if code == 0:
        if (module, name) == ("uuid", "UUID"):
            h = payload
            return {"$type": "uuid", "value": f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"}
        if (module, name) == ("decimal", "Decimal"):
            return {"$type": "decimal", "value": payload}
        if (module, name) in (("builtins", "set"), ("builtins", "frozenset")):
            return {"$type": name, "items": sorted((js(x) for x in payload), key=json_sort_key)}
        if (module, name) == ("collections", "deque"):
            return {"$type": "deque", "items": [js(x) for x in payload]}
        if module == "ipaddress":
            return {"$type": "ip", "class": cls, "value": payload}
        if (module, name) == ("zoneinfo", "ZoneInfo"):
            return {"$type": "zoneinfo", "key": payload}
        if module == "pydantic.types" and name.startswith("Secret"):
            return {"$type": "secret", "class": cls, "value": payload}
        return {"$type": "enum", "class": cls, "value": js(payload)}
    if code == 1:
        if (module, name) == ("datetime", "timedelta"):
            return td_js(Ext(1, d))
        if (module, name) == ("datetime", "date"):
            y, m, day = payload
            return {"$type": "date", "iso": f"{y:04d}-{m:02d}-{day:02d}"}
        if (module, name) == ("datetime", "timezone"):
            return {"$type": "timezone", "offset": td_js(payload[0]), "name": payload[1] if len(payload) > 1 else None}
        if module in ("pathlib", "pathlib._local"):
            return {"$type": "path", "class": f"pathlib.{name}", "parts": payload}
        if (module, name) == ("re", "compile"):
            return {"$type": "regex", "pattern": payload[0], "flags": payload[1]}
        if (module, name) == ("langgraph.types", "Send"):
            out = {"$type": "send", "node": payload[0], "arg": js(payload[1])}
            if len(payload) > 2:
                out["timeout"] = js(payload[2])
            return out
        raise ValueError(f"extension 1 of unknown class {cls}")
    if code == 2:
        if (module, name) == ("datetime", "time"):
            t = payload
            iso = f"{t['hour']:02d}:{t['minute']:02d}:{t['second']:02d}"
            if t["microsecond"]:
                iso += f".{t['microsecond']:06d}"
            if t["tzinfo"] is not None:
                iso += offset_iso(td_js(t["tzinfo"].data[2][0]))
            return {"$type": "time", "iso": iso}
        return {"$type": "object", "class": cls, "fields": js(payload)}
    raise ValueError(f"unknown extension code {code}")


# --------------------------------------------------------------------------
# Reading the savers' tables into {(thread, ns): {checkpoint_id: record}}.


def write_key(w: tuple) -> tuple:
    task_id, _channel, _value, task_path, idx = w
    return (task_path, task_id, idx)


def read_sqlite(path: str) -> dict:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    writes: dict[tuple, list] = {}
    for thread, ns, cid, task_id, task_path, idx, channel, type_, value in conn.execute(
        "SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value FROM writes"
    ):
        writes.setdefault((thread, ns, cid), []).append((task_id, channel, loads_typed(type_, value), task_path, idx))
    out: dict[tuple, dict] = {}
    for thread, ns, cid, parent, type_, blob, meta in conn.execute(
        "SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints"
    ):
        ck = loads_typed(type_, blob)
        ws = sorted(writes.get((thread, ns, cid), []), key=write_key)
        out.setdefault((thread, ns), {})[cid] = {
            "parent": parent,
            "checkpoint": ck,
            "metadata": json.loads(meta),
            "writes": [[w[0], w[1], w[2]] for w in ws],
        }
    conn.close()
    return out


def read_postgres(url: str) -> dict:
    import psycopg

    out: dict[tuple, dict] = {}
    with psycopg.connect(url) as conn:
        blobs = {}
        for thread, ns, channel, version, type_, blob in conn.execute(
            "SELECT thread_id, checkpoint_ns, channel, version, type, blob FROM checkpoint_blobs"
        ):
            blobs[(thread, ns, channel, version)] = (type_, blob)
        writes: dict[tuple, list] = {}
        for thread, ns, cid, task_id, task_path, idx, channel, type_, blob in conn.execute(
            "SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, blob FROM checkpoint_writes"
        ):
            writes.setdefault((thread, ns, cid), []).append((task_id, channel, loads_typed(type_, bytes(blob)), task_path, idx))
        for thread, ns, cid, parent, ck, meta in conn.execute(
            "SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint, metadata FROM checkpoints"
        ):
            values = {k: js(v) for k, v in (ck.get("channel_values") or {}).items()}
            for channel, version in ck["channel_versions"].items():
                b = blobs.get((thread, ns, channel, version))
                if b is not None and b[0] != "empty":
                    values[channel] = loads_typed(b[0], bytes(b[1]))
            ck = {**ck, "channel_values": values}
            ws = sorted(writes.get((thread, ns, cid), []), key=write_key)
            out.setdefault((thread, ns), {})[cid] = {
                "parent": parent,
                "checkpoint": ck,
                "metadata": meta,
                "writes": [[w[0], w[1], w[2]] for w in ws],
            }
    return out


# --------------------------------------------------------------------------
# State: plain channels as stored, DeltaChannels by the ancestor walk.


def is_internal(channel: str) -> bool:
    return channel.startswith("__") or channel.startswith("branch:to:")


def overwrite_value(v: Any) -> tuple[bool, Any]:
    if isinstance(v, dict) and v.get("$type") == "object" and v.get("class") == "langgraph.types.Overwrite":
        return True, v["fields"]["value"]
    if isinstance(v, dict) and set(v) == {"__overwrite__"}:
        return True, v["__overwrite__"]
    return False, None


def reduce_messages(state: list, writes: list) -> list:
    msgs = []
    for w in writes:
        for m in w if isinstance(w, list) else [w]:
            if not (isinstance(m, dict) and m.get("$type") == "message"):
                raise ValueError(f"a DeltaChannel message write that is not a message: {m!r}")
            msgs.append(m)
    for i in range(len(msgs) - 1, -1, -1):
        if msgs[i]["class"].endswith(".RemoveMessage") and msgs[i]["fields"]["id"] == "__remove_all__":
            state, msgs = [], msgs[i + 1 :]
            break
    result: list = list(state)
    index = {m["fields"]["id"]: i for i, m in enumerate(result) if m["fields"]["id"] is not None}
    for m in msgs:
        mid = m["fields"]["id"]
        if mid is None:
            result.append(m)
        elif m["class"].endswith(".RemoveMessage"):
            if mid in index:
                result[index.pop(mid)] = None
        elif mid in index:
            result[index[mid]] = m
        else:
            index[mid] = len(result)
            result.append(m)
    return [m for m in result if m is not None]


def reduce_concat(state: list, writes: list) -> list:
    out = list(state)
    for w in writes:
        out.extend(w if isinstance(w, list) else [w])
    return out


def delta_channels(records: dict) -> set[str]:
    found = set()
    for r in records.values():
        found.update(r["metadata"].get("counters_since_delta_snapshot", {}))
        for k, v in r["checkpoint"]["channel_values"].items():
            if isinstance(v, dict) and v.get("$type") == "delta_snapshot":
                found.add(k)
    return found


def delta_value(records: dict, cid: str, channel: str) -> Any:
    here = records[cid]["checkpoint"]["channel_values"]
    if channel in here:
        v = here[channel]
        return v["value"] if isinstance(v, dict) and v.get("$type") == "delta_snapshot" else v
    seed: Any = []
    chain: list[list] = []
    seen = {cid}
    cur = records[cid]["parent"]
    while cur is not None and cur not in seen and cur in records:
        seen.add(cur)
        rec = records[cur]
        chain.append([w[2] for w in rec["writes"] if w[1] == channel])
        vals = rec["checkpoint"]["channel_values"]
        if channel in vals:
            v = vals[channel]
            seed = v["value"] if isinstance(v, dict) and v.get("$type") == "delta_snapshot" else v
            break
        cur = rec["parent"]
    writes = [w for ws in reversed(chain) for w in ws]
    base, start = seed, 0
    for i, w in enumerate(writes):
        ow, value = overwrite_value(w)
        if ow:
            base, start = (value if value is not None else []), i + 1
    rest = writes[start:]
    reducer = reduce_messages if channel == "messages" else reduce_concat
    return reducer(base, rest) if rest else base


def state_values(records: dict, cid: str, deltas: set[str]) -> dict:
    ck = records[cid]["checkpoint"]
    out = {}
    for channel in ck["channel_versions"]:
        if is_internal(channel):
            continue
        if channel in deltas:
            out[channel] = delta_value(records, cid, channel)
        elif channel in ck["channel_values"]:
            out[channel] = ck["channel_values"][channel]
    return out


# --------------------------------------------------------------------------


def check(name: str, got: dict, expected_path: str) -> int:
    exp = json.load(open(expected_path))
    failures = 0
    n = 0

    def fail(where: str, what: str, a: Any, b: Any) -> None:
        nonlocal failures
        failures += 1
        if failures <= 20:
            print(f"{name} {where}: {what} differs\n  read:     {json.dumps(a)[:400]}\n  expected: {json.dumps(b)[:400]}")

    exp_keys = {(t, ns) for t, nss in exp["threads"].items() for ns in nss}
    if exp_keys != set(got):
        fail("", "the set of (thread, namespace)", sorted(got), sorted(exp_keys))
    for (thread, ns), records in sorted(got.items()):
        deltas = delta_channels(records)
        expected = {e["checkpoint_id"]: e for e in exp["threads"].get(thread, {}).get(ns, [])}
        if set(expected) != set(records):
            fail(f"{thread}/{ns}", "checkpoint ids", sorted(records), sorted(expected))
        for cid, rec in records.items():
            e = expected.get(cid)
            if e is None:
                continue
            n += 1
            where = f"{thread}/{ns or '(root)'}/{cid}"
            if rec["parent"] != e["parent_checkpoint_id"]:
                fail(where, "parent", rec["parent"], e["parent_checkpoint_id"])
            for key in ("v", "id", "ts", "channel_values", "channel_versions", "versions_seen", "updated_channels"):
                if rec["checkpoint"].get(key) != e["checkpoint"][key]:
                    fail(where, f"checkpoint.{key}", rec["checkpoint"].get(key), e["checkpoint"][key])
            if rec["metadata"] != e["metadata"]:
                fail(where, "metadata", rec["metadata"], e["metadata"])
            if rec["writes"] != e["pending_writes"]:
                fail(where, "pending_writes", rec["writes"], e["pending_writes"])
            want = {k: v for k, v in e["state"]["values"].items() if k not in e["state"]["values_not_in_file"]}
            have = state_values(records, cid, deltas)
            if have != want:
                for k in sorted(set(have) | set(want)):
                    if have.get(k) != want.get(k):
                        fail(where, f"state.values[{k!r}]", have.get(k), want.get(k))
    print(f"{name}: {n} checkpoints read as FORMATS.md says, {failures} differences from LangGraph's reading")
    return failures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sqlite", required=True)
    ap.add_argument("--expected-sqlite", required=True)
    ap.add_argument("--postgres")
    ap.add_argument("--expected-postgres")
    args = ap.parse_args()
    failures = check("sqlite", read_sqlite(args.sqlite), args.expected_sqlite)
    if args.postgres:
        failures += check("postgres", read_postgres(args.postgres), args.expected_postgres)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
