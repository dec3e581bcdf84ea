import { expect, test } from "bun:test";
import { messageOf, namedBy } from "../../src/kafka/errors.ts";

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
  expect(messageOf(new AggregateError([attempt(), attempt(), attempt()], "metadata failed 3 times."))).toBe("metadata failed 3 times.: Cannot connect to any broker.");
});

test("namedBy leads an error with the component's label once: the client's errors get it, ours (which carry it) are left as they are", () => {
  expect(namedBy("kafka channel c1", new Error("Request timed out"))).toBe("kafka channel c1: Request timed out");
  expect(namedBy("kafka channel c1", new Error("kafka channel c1: Kafka at b1:9092: no answer"))).toBe("kafka channel c1: Kafka at b1:9092: no answer");
  // Another component's label is no name of this one.
  expect(namedBy("kafka channel c1", new Error("kafka channel c10: down"))).toBe("kafka channel c1: kafka channel c10: down");
});
