import { expect, test } from "bun:test";
import { messageOf, namedBy, protocolMismatchHint, unlabelled, withProtocolHint } from "../../src/kafka/errors.ts";

test("messageOf says a cause once: appended in parentheses, not again when the message already says it", () => {
  const refused = new Error("connect ECONNREFUSED 127.0.0.1:9092");
  expect(messageOf(new Error("Connection to 127.0.0.1:9092 failed.", { cause: refused }))).toBe("Connection to 127.0.0.1:9092 failed. (connect ECONNREFUSED 127.0.0.1:9092)");
  const explained = new Error(`kafka sink k1: Kafka at 127.0.0.1:9092: ${messageOf(refused)}`, { cause: refused });
  expect(messageOf(explained)).toBe("kafka sink k1: Kafka at 127.0.0.1:9092: connect ECONNREFUSED 127.0.0.1:9092");
  // Wrapped twice, each naming what it wraps.
  const wrapped = new Error(`outer: ${messageOf(explained)}`, { cause: explained });
  expect(messageOf(wrapped)).toBe("outer: kafka sink k1: Kafka at 127.0.0.1:9092: connect ECONNREFUSED 127.0.0.1:9092");
});

test("messageOf lists each distinct error of an AggregateError once (the client's one error per attempt)", () => {
  const attempt = () => new Error("Cannot connect to any broker.");
  expect(messageOf(new AggregateError([attempt(), attempt(), attempt()], "metadata failed 3 times."))).toBe("metadata failed 3 times: Cannot connect to any broker.");
});

test("namedBy leads an error with the component's label once: the client's errors get it, ours (which carry it) are left as they are", () => {
  expect(namedBy("kafka channel c1", new Error("Request timed out"))).toBe("kafka channel c1: Request timed out");
  expect(namedBy("kafka channel c1", new Error("kafka channel c1: Kafka at b1:9092: no answer"))).toBe("kafka channel c1: Kafka at b1:9092: no answer");
  // Another component's label is no name of this one.
  expect(namedBy("kafka channel c1", new Error("kafka channel c10: down"))).toBe("kafka channel c1: kafka channel c10: down");
});

test("protocolMismatchHint speaks only of what a mismatched security.protocol does: nothing for a refused connect, nor for a TLS connection reset after its handshake", () => {
  const plain = { securityProtocol: "PLAINTEXT", securityProtocolKey: "kafka.producer.security.protocol" };
  const tls = { securityProtocol: "SASL_SSL", securityProtocolKey: "kafka.consumer.security.protocol" };
  const refused = new Error("Connection to 127.0.0.1:9092 failed.", { cause: new Error("connect ECONNREFUSED 127.0.0.1:9092") });
  expect(protocolMismatchHint(refused, plain)).toBe("");
  expect(protocolMismatchHint(refused, tls)).toBe("");
  const closed = new AggregateError([new Error("Connection closed")], "listApis failed 1 times.");
  // What closed it is asked by a probe of the listener instead (listener-probe.test.ts).
  expect(protocolMismatchHint(closed, plain)).toBe("");
  expect(protocolMismatchHint(closed, tls)).toBe("");
  const resetConnecting = new Error("Connection to 127.0.0.1:9092 failed.", { cause: new Error("read ECONNRESET") });
  expect(protocolMismatchHint(resetConnecting, tls)).toContain("(kafka.consumer.security.protocol is SASL_SSL): if this is a PLAINTEXT or SASL_PLAINTEXT listener");
  expect(protocolMismatchHint(resetConnecting, plain)).toBe("");
  expect(protocolMismatchHint(new Error("read ECONNRESET"), tls)).toBe("");
  // The client's own word for a TLS alert, said with the setting and its value; no hint, no change.
  const alert = new AggregateError([new Error("Broker requires TLS.")], "metadata failed 1 times.");
  expect(withProtocolHint(alert, plain)).toBe(
    "metadata failed 1 times: Broker requires TLS; the listener speaks TLS (kafka.producer.security.protocol is PLAINTEXT): set kafka.producer.security.protocol = SSL, or SASL_SSL for a SASL listener",
  );
  expect(withProtocolHint(refused, plain)).toBe("Connection to 127.0.0.1:9092 failed. (connect ECONNREFUSED 127.0.0.1:9092)");
});

test("unlabelled drops a publisher's own label from an error quoted inside a message that names the component already; other labels stay", () => {
  expect(unlabelled("kafka sink k1", new Error("kafka sink k1: topic d does not exist"))).toBe("topic d does not exist");
  expect(unlabelled("kafka sink k1", new Error("kafka sink k10: topic d does not exist"))).toBe("kafka sink k10: topic d does not exist");
  expect(unlabelled("kafka sink k1", new Error("Request timed out"))).toBe("Request timed out");
});
