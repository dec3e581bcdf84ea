"""A Thrift client of Flume's ThriftSourceProtocol, built on Debian's python3-thrift and code
generated from test/fixtures/thrift/*.thrift. The tests use it as a third-party client of our
thrift source.

usage: client.py GEN_DIR MODULE HOST PORT PROTOCOL [CA_FILE [CERT_FILE KEY_FILE]]  < calls.json

GEN_DIR holds the output of `thrift --gen py`; MODULE is flume_thrift or flume_thrift_extended.
PROTOCOL is binary or compact; with CA_FILE the connection uses TLS, verifying the server's
certificate against it, and presenting CERT_FILE (key in KEY_FILE) when given. calls.json is a list of calls, made in order over one framed
connection:
  {"method": "append", "event": EVENT}
  {"method": "appendBatch", "events": [EVENT, ...]}
  {"method": "raw", "name": "someMethod"}   (a call with no arguments, for unknown methods)
"args": [...] adds further arguments (the extended IDL's calls take a trace string).
EVENT is {"headers": {...}, "body": "utf-8 text"} or with "body_size": N (N bytes, byte i is
i % 251) instead of "body"; with MODULE flume_thrift_extended it may hold "extra": fields of the
extended ThriftFlumeEvent. One JSON line per call goes to stdout: {"status": "OK"} or
{"exception": {"type": N, "message": "..."}} or {"error": "..."} (then the script stops; also
when the connection cannot be opened).
"""
import importlib
import json
import sys

from thrift.protocol import TBinaryProtocol, TCompactProtocol
from thrift.Thrift import TApplicationException, TMessageType
from thrift.transport import TSocket, TSSLSocket, TTransport

gen_dir, module, host, port, protocol = sys.argv[1:6]
ca_file = sys.argv[6] if len(sys.argv) > 6 else None
cert_file, key_file = (sys.argv[7], sys.argv[8]) if len(sys.argv) > 8 else (None, None)
sys.path.insert(0, gen_dir)
service = importlib.import_module(f"{module}.ThriftSourceProtocol")
ttypes = importlib.import_module(f"{module}.ttypes")

if ca_file:
    import ssl
    socket = TSSLSocket.TSSLSocket(host, int(port), cert_reqs=ssl.CERT_REQUIRED, ca_certs=ca_file, certfile=cert_file, keyfile=key_file)
else:
    socket = TSocket.TSocket(host, int(port))
transport = TTransport.TFramedTransport(socket)
proto = TBinaryProtocol.TBinaryProtocol(transport) if protocol == "binary" else TCompactProtocol.TCompactProtocol(transport)
client = service.Client(proto)


def body_of(spec):
    if "body_size" in spec:
        return bytes(i % 251 for i in range(spec["body_size"]))
    return spec.get("body", "").encode("utf-8")


def origin_of(spec):
    fields = dict(spec)
    if "tags" in fields:  # map<i32, set<string>>; JSON keys are strings
        fields["tags"] = {int(k): set(v) for k, v in fields["tags"].items()}
    return ttypes.Origin(**fields)


def extra_of(spec):
    extra = dict(spec.get("extra", {}))
    if "origin" in extra:
        extra["origin"] = origin_of(extra["origin"])
    if "hops" in extra:
        extra["hops"] = [origin_of(h) for h in extra["hops"]]
    return extra


def event_of(spec):
    return ttypes.ThriftFlumeEvent(headers=spec.get("headers", {}), body=body_of(spec), **extra_of(spec))


def raw_call(name):
    """A call the generated client cannot make: a method the service does not have."""
    proto.writeMessageBegin(name, TMessageType.CALL, 7)
    proto.writeStructBegin("args")
    proto.writeFieldStop()
    proto.writeStructEnd()
    proto.writeMessageEnd()
    transport.flush()
    (_, mtype, seqid) = proto.readMessageBegin()
    if mtype != TMessageType.EXCEPTION:
        raise RuntimeError(f"expected an exception, got message type {mtype}")
    x = TApplicationException()
    x.read(proto)
    proto.readMessageEnd()
    raise x


def out(obj):
    print(json.dumps(obj), flush=True)


calls = json.load(sys.stdin)
try:
    transport.open()
except Exception as e:  # refused, or a TLS handshake the server failed
    out({"error": f"{type(e).__name__}: {e}"})
    sys.exit(0)
for call in calls:
    try:
        if call["method"] == "append":
            status = client.append(event_of(call["event"]), *call.get("args", []))
        elif call["method"] == "appendBatch":
            status = client.appendBatch([event_of(e) for e in call["events"]], *call.get("args", []))
        else:
            status = raw_call(call["name"])
        out({"status": ttypes.Status._VALUES_TO_NAMES.get(status, status)})
    except TApplicationException as x:
        out({"exception": {"type": x.type, "message": x.message}})
    except Exception as e:  # a transport error: the connection is gone
        out({"error": f"{type(e).__name__}: {e}"})
        break
transport.close()
