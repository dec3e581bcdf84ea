/**
 * Which failed sends the Kafka sink tries again until kafka.producer.delivery.timeout.ms: the
 * Kafka client's own error objects, built with its classes as it builds them (its connection,
 * pool and retry code), provoked from it against sockets that refuse or close, and answered by
 * a live broker (a record too large, a topic that does not exist).
 */
import { describe, expect, test } from "bun:test";
import net from "node:net";
import { AuthenticationError, MultipleErrors, NetworkError, Producer, ProtocolError, ResponseError, TimeoutError, UserError } from "@platformatic/kafka";
import { isTooLarge, isUnknownTopic, KafkaDeliveryTimeoutError, KafkaRecordTooLargeError, KafkaSendAbortedError, KafkaTopicMissingError } from "../../src/kafka/errors.ts";
import { isRetriable } from "../../src/kafka/retriable.ts";
import { needsJvm } from "../support/jvm.ts";
import { kafkaForFile } from "../support/kafka-tests.ts";
import { freePort } from "../support/ports.ts";

const PRODUCE = 0;

/** A socket's error as Node makes it, from a real connect. */
async function socketError(port: number): Promise<NodeJS.ErrnoException> {
  return new Promise((resolve) => net.connect(port, "127.0.0.1").once("error", resolve));
}

/** A Produce response with one partition's error, as the client reads it. */
function produceError(...codes: number[]): ResponseError {
  return new ResponseError(PRODUCE, 9, Object.fromEntries(codes.map((c, i) => [`/responses/0/partition_responses/${i}`, [c, null]])), {});
}

/** The client's retries of one operation given up: every attempt's error. */
function attempts(...errors: Error[]): MultipleErrors {
  return new MultipleErrors(`produce failed ${errors.length} times.`, errors);
}

describe("a broker's error codes, as Kafka's protocol marks them retriable", () => {
  // Kafka's protocol error table, "Retriable" column (the Java producer's RetriableException).
  const retriable = ["NOT_LEADER_OR_FOLLOWER", "LEADER_NOT_AVAILABLE", "REQUEST_TIMED_OUT", "NETWORK_EXCEPTION", "NOT_ENOUGH_REPLICAS", "NOT_ENOUGH_REPLICAS_AFTER_APPEND", "KAFKA_STORAGE_ERROR", "REPLICA_NOT_AVAILABLE", "CORRUPT_MESSAGE", "UNKNOWN_TOPIC_OR_PARTITION", "FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH", "THROTTLING_QUOTA_EXCEEDED"];
  const final = ["MESSAGE_TOO_LARGE", "RECORD_LIST_TOO_LARGE", "TOPIC_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED", "INVALID_RECORD", "INVALID_REQUIRED_ACKS", "INVALID_TIMESTAMP", "SASL_AUTHENTICATION_FAILED", "UNSUPPORTED_SASL_MECHANISM", "ILLEGAL_SASL_STATE", "INVALID_TOPIC_EXCEPTION", "UNSUPPORTED_VERSION", "POLICY_VIOLATION", "INVALID_PRODUCER_EPOCH", "OUT_OF_ORDER_SEQUENCE_NUMBER", "UNKNOWN_SERVER_ERROR", "BROKER_NOT_AVAILABLE"];

  for (const id of retriable) {
    test(`${id} in a Produce response is tried again`, () => {
      const err = new ResponseError(PRODUCE, 9, { "/responses/0/partition_responses/0": [new ProtocolError(id).apiCode as number, null] }, {});
      expect(isRetriable(err)).toBe(true);
    });
  }
  for (const id of final) {
    test(`${id} in a Produce response fails the batch at once`, () => {
      const err = new ResponseError(PRODUCE, 9, { "/responses/0/partition_responses/0": [new ProtocolError(id).apiCode as number, null] }, {});
      expect(isRetriable(err)).toBe(false);
    });
  }

  test("one partition refusing the batch as too large fails it, whatever the other partitions said", () => {
    // NOT_LEADER_OR_FOLLOWER (6) on one partition, MESSAGE_TOO_LARGE (10) on another.
    const err = produceError(6, 10);
    expect(isRetriable(err)).toBe(false);
    expect(isTooLarge(err)).toBe(true);
  });

  test("several partitions whose leaders moved are tried again", () => {
    expect(isRetriable(produceError(6, 5, 19))).toBe(true);
  });
});

describe("the client's network errors", () => {
  test("a broker that refuses connections (its socket's ECONNREFUSED under the client's NetworkError, one per broker) is tried again", async () => {
    const refused = await socketError(await freePort());
    expect(refused.code).toBe("ECONNREFUSED");
    const err = new MultipleErrors("Cannot connect to any broker.", [new NetworkError("Connection to 127.0.0.1:1 failed.", { cause: refused }), new NetworkError("Connection to 127.0.0.1:2 failed.", { cause: refused })]);
    expect(isRetriable(err)).toBe(true);
  });

  test("a connection closed under a request, and a request or connect timing out, are tried again", () => {
    expect(isRetriable(new NetworkError("Connection closed"))).toBe(true);
    expect(isRetriable(new TimeoutError("Request timed out", { canRetry: true }))).toBe(true);
    expect(isRetriable(new TimeoutError("Connection to 127.0.0.1:9092 timed out.", { canRetry: true }))).toBe(true);
  });

  test("a socket's transient errors are tried again; any other socket error (a TLS certificate refused) is not", () => {
    for (const code of ["ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN", "ENOTFOUND", "ERR_STREAM_DESTROYED"]) {
      const cause = Object.assign(new Error(`connect ${code}`), { code, syscall: "connect" });
      expect(isRetriable(new NetworkError("Connection error", { cause }))).toBe(true);
    }
    const tls = Object.assign(new Error("self-signed certificate"), { code: "DEPTH_ZERO_SELF_SIGNED_CERT" });
    expect(isRetriable(new NetworkError("Connection to 127.0.0.1:9093 failed.", { cause: tls }))).toBe(false);
  });

  test("a SASL failure is final, also under the NetworkError the client wraps it in", () => {
    const sasl = new AuthenticationError("SASL authentication failed.", { cause: produceError(58) });
    expect(isRetriable(sasl)).toBe(false);
    expect(isRetriable(new NetworkError("Connection to 127.0.0.1:9093 failed.", { cause: sasl }))).toBe(false);
    expect(isRetriable(new MultipleErrors("Cannot connect to any broker.", [new NetworkError("Connection to 127.0.0.1:9093 failed.", { cause: sasl })]))).toBe(false);
  });

  test("a closed client or pool is final", () => {
    expect(isRetriable(new NetworkError("Connection pool is closed.", { canRetry: false, closed: true }))).toBe(false);
    expect(isRetriable(attempts(new NetworkError("Connection closed"), new UserError("Client closed while retrying produce.")))).toBe(false);
  });

  test("the client's given-up retries are tried again when every attempt was retriable, not when the last one was final", () => {
    expect(isRetriable(attempts(new NetworkError("Connection closed"), produceError(6), new TimeoutError("Request timed out", { canRetry: true })))).toBe(true);
    expect(isRetriable(attempts(produceError(6), produceError(29)))).toBe(false);
  });

  test("a topic the cluster's metadata does not know (the client's UserError) is final, and said to be an unknown topic", () => {
    const err = new UserError("Unknown topic events.");
    expect(isRetriable(err)).toBe(false);
    expect(isUnknownTopic(err)).toBe(true);
    expect(isUnknownTopic(produceError(3))).toBe(true);
    expect(isUnknownTopic(new NetworkError("Connection closed"))).toBe(false);
  });
});

describe("errors that are not the client's", () => {
  test("ours keep their meaning: too large, topic missing, timed out, aborted are never tried again", () => {
    for (const err of [new KafkaRecordTooLargeError("too large"), new KafkaTopicMissingError("missing"), new KafkaDeliveryTimeoutError("timed out", { cause: new NetworkError("Connection closed") }), new KafkaSendAbortedError("stopping")]) {
      expect(isRetriable(err)).toBe(false);
    }
    expect(isTooLarge(new KafkaRecordTooLargeError("a record of 2000 bytes"))).toBe(true);
  });

  test("an error with nothing to tell (a plain Error, a string, nothing) is not tried again, and words in its text change nothing", () => {
    expect(isRetriable(new Error("connect ECONNREFUSED 127.0.0.1:9092: Connection closed, NOT_LEADER_OR_FOLLOWER"))).toBe(false);
    expect(isRetriable("ECONNREFUSED")).toBe(false);
    expect(isRetriable(undefined)).toBe(false);
    expect(isTooLarge(new Error("MESSAGE_TOO_LARGE: too large"))).toBe(false);
  });

  test("a plain Error or AggregateError wrapping the client's errors is as retriable as they are", () => {
    expect(isRetriable(new Error("sending", { cause: new NetworkError("Connection closed") }))).toBe(true);
    expect(isRetriable(new AggregateError([new NetworkError("Connection closed"), produceError(10)]))).toBe(false);
  });

  test("an error that is its own cause does not loop", () => {
    const err = new NetworkError("Connection error");
    (err as { cause?: unknown }).cause = err;
    expect(isRetriable(err)).toBe(true);
  });
});

describe("errors the client raises itself, without a broker", () => {
  async function metadataError(bootstrap: string, options: { retries?: number } = {}): Promise<unknown> {
    const producer = new Producer({ clientId: "retriable-test", bootstrapBrokers: [bootstrap], retries: options.retries ?? 0, retryDelay: 10 });
    try {
      await producer.metadata({ topics: ["events"] });
      throw new Error("metadata did not fail");
    } catch (err) {
      return err;
    } finally {
      await producer.close(true).catch(() => {});
    }
  }

  test("no broker listening: tried again, also after the client's own retries", async () => {
    const port = await freePort();
    expect(isRetriable(await metadataError(`127.0.0.1:${port}`))).toBe(true);
    expect(isRetriable(await metadataError(`127.0.0.1:${port}`, { retries: 2 }))).toBe(true);
  });

  test("a broker that closes each connection at once: tried again", async () => {
    const closing = net.createServer((s) => s.destroy());
    await new Promise<void>((resolve) => closing.listen(0, "127.0.0.1", resolve));
    try {
      const closed = await metadataError(`127.0.0.1:${(closing.address() as net.AddressInfo).port}`);
      expect(closed).toBeInstanceOf(NetworkError);
      expect(isRetriable(closed)).toBe(true);
    } finally {
      closing.close();
    }
  });
});

describe("a live broker's answers", () => {
  const kafka = kafkaForFile({ autoCreateTopics: false });

  needsJvm.test(
    "a record over the topic's max.message.bytes is refused as too large, not retriable; a topic that does not exist is unknown, not retriable",
    async () => {
      const topic = `retriable-${Date.now()}`;
      await kafka.createTopic(topic, { config: { "max.message.bytes": "1000" } });
      const producer = new Producer({ clientId: "retriable-test", bootstrapBrokers: kafka.bootstrap.split(","), retries: 0, autocreateTopics: false });
      try {
        const tooLarge = await producer.send({ messages: [{ topic, value: Buffer.alloc(5000, 120) }] }).then(
          () => null,
          (err: unknown) => err,
        );
        expect(isTooLarge(tooLarge)).toBe(true);
        expect(isRetriable(tooLarge)).toBe(false);

        const missing = await producer.metadata({ topics: [`${topic}-missing`] }).then(
          () => null,
          (err: unknown) => err,
        );
        expect(isUnknownTopic(missing)).toBe(true);
        expect(isRetriable(missing)).toBe(false);
      } finally {
        await producer.close(true).catch(() => {});
      }
    },
    240_000,
  );
});
