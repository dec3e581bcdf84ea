"""A Thrift server of Flume's ThriftSourceProtocol, built on Debian's python3-thrift and code
generated from test/fixtures/thrift/flume.thrift. The tests point our thrift sink at it.

usage: server.py GEN_DIR PROTOCOL ANSWERS [CERT_FILE KEY_FILE]

Listens on 127.0.0.1 (an ephemeral port; TLS with CERT_FILE and KEY_FILE), framed transport,
PROTOCOL binary or compact, and prints "listening PORT". ANSWERS is a comma-separated script,
one entry per call received, then OK for every further call: OK, FAILED, ERROR or UNKNOWN
(answered as that Status), EXCEPTION (an INTERNAL_ERROR TApplicationException) or DROP (the
connection is closed without an answer). Each call is printed as one JSON line:
{"method": ..., "events": [{"headers": {...}, "body": "<hex>"}], "answer": ...}.
"""
import json
import sys
import threading

from thrift.protocol import TBinaryProtocol, TCompactProtocol
from thrift.transport import TSocket, TSSLSocket, TTransport

gen_dir, protocol, answers = sys.argv[1:4]
cert_file, key_file = (sys.argv[4], sys.argv[5]) if len(sys.argv) > 5 else (None, None)
sys.path.insert(0, gen_dir)
from flume_thrift import ThriftSourceProtocol  # noqa: E402
from flume_thrift.ttypes import Status  # noqa: E402

script = [a for a in answers.split(",") if a]
lock = threading.Lock()


class Handler:
    def answer(self, method, events):
        with lock:
            answer = script.pop(0) if script else "OK"
            print(json.dumps({
                "method": method,
                "events": [{"headers": e.headers, "body": e.body.hex()} for e in events],
                "answer": answer,
            }), flush=True)
        if answer == "DROP":
            # Propagates out of the processor: the connection loop below closes the socket.
            raise TTransport.TTransportException(message="dropped by the test script")
        if answer == "EXCEPTION":
            raise RuntimeError("the test script asked for an exception")
        return Status._NAMES_TO_VALUES[answer]

    def append(self, event):
        return self.answer("append", [event])

    def appendBatch(self, events):
        return self.answer("appendBatch", events)


processor = ThriftSourceProtocol.Processor(Handler())


def serve(client):
    transport = TTransport.TFramedTransport(client)
    proto = TBinaryProtocol.TBinaryProtocol(transport) if protocol == "binary" else TCompactProtocol.TCompactProtocol(transport)
    try:
        while True:
            processor.process(proto, proto)
    except TTransport.TTransportException:
        pass
    finally:
        transport.close()


if cert_file:
    server = TSSLSocket.TSSLServerSocket(host="127.0.0.1", port=0, certfile=cert_file, keyfile=key_file)
else:
    server = TSocket.TServerSocket(host="127.0.0.1", port=0)
server.listen()
print(f"listening {server.handle.getsockname()[1]}", flush=True)
while True:
    client = server.accept()
    if client is not None:
        threading.Thread(target=serve, args=(client,), daemon=True).start()
