"""Prints, as hex, the framed appendBatch call python3-thrift's generated client writes for the
events on stdin (JSON: [{"headers": {...}, "body": "text"}, ...]), with sequence id 0.
The tests compare it byte for byte with our encoder's output.

usage: encode.py GEN_DIR PROTOCOL < events.json
"""
import json
import sys

from thrift.protocol import TBinaryProtocol, TCompactProtocol
from thrift.transport import TTransport

gen_dir, protocol = sys.argv[1:3]
sys.path.insert(0, gen_dir)
from flume_thrift import ThriftSourceProtocol  # noqa: E402
from flume_thrift.ttypes import ThriftFlumeEvent  # noqa: E402

buffer = TTransport.TMemoryBuffer()
framed = TTransport.TFramedTransport(buffer)
proto = TBinaryProtocol.TBinaryProtocol(framed) if protocol == "binary" else TCompactProtocol.TCompactProtocol(framed)
client = ThriftSourceProtocol.Client(proto)
events = [ThriftFlumeEvent(headers=e["headers"], body=e["body"].encode("utf-8")) for e in json.load(sys.stdin)]
client.send_appendBatch(events)
print(buffer.getvalue().hex())
