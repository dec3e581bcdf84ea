/**
 * A TCP proxy on 127.0.0.1 between Kafka clients and one broker (which advertises the proxy's
 * port, so every connection goes through it) that makes two network faults:
 * - `loseProduceAnswers(n)` loses the answers of Produce requests the broker has already
 *   written: it holds the next n Produce responses of a connection and then closes it (and the
 *   broker's side) without forwarding them; the proxy then refuses connections for a while,
 *   long enough for the client's own quick retries to fail and the sender's retry to take over.
 * - `loseOffsetCommits()` loses every OffsetCommit request on its way to the broker until
 *   `restore()`: the broker never sees it, and the connection it came on is closed (`cut`, an
 *   error at once) or left open (`unanswered`, the request times out). New connections are
 *   accepted and other requests go through (metadata, joins, heartbeats, a consumer's fetches on
 *   their own connection), so only the commits fail.
 * - `loseJoins(clientId)` does the same (`cut`) to the JoinGroup requests of one client id:
 *   that client's consumers cannot join or rejoin a group; other clients' joins go through.
 */
import net from "node:net";

type Outage =
  | {
      kind: "produce answers";
      /** Produce answers to hold on a connection before it is cut. */
      hold: number;
      refuseMs: number;
      refuseAtLeast: number;
    }
  | { kind: "requests"; api: number; clientId?: string; how: RequestLoss };

/** What the client sees of a lost request: its connection closed, or no answer. */
export type RequestLoss = "cut" | "unanswered";

/** How long connections are refused after the fault: at least `refuseMs` and `refuseAtLeast` attempts (at most 15 s). */
interface Refusal {
  refuseMs?: number;
  refuseAtLeast?: number;
}

export interface KafkaProxy {
  readonly port: number;
  /** Produce answers (written by the broker, never forwarded) or requests (never sent) lost in the last outage. */
  readonly lost: number;
  /** Connections refused in the last outage. */
  readonly refused: number;
  /** The next `n` Produce answers of one connection are held, then the connection is cut; connections are refused for at least `refuseMs` and `refuseAtLeast` attempts (at most 15 s). */
  loseProduceAnswers(n: number, o?: Refusal): void;
  /** Every OffsetCommit request until restore() is not forwarded: its connection is cut (the default) or left without an answer. */
  loseOffsetCommits(how?: RequestLoss): void;
  /** Every JoinGroup request of client `clientId` until restore() is not forwarded: its connection is cut. */
  loseJoins(clientId: string): void;
  /** Ends the fault in effect. */
  restore(): void;
  /** Whether the last fault is over. */
  readonly up: boolean;
  close(): Promise<void>;
}

const PRODUCE = 0;
const OFFSET_COMMIT = 8;
const JOIN_GROUP = 11;

/** The client id in a request's header (v1 and v2 alike: a 2-byte length, then the id). */
function clientIdOf(frame: Buffer): string {
  const n = frame.readInt16BE(12);
  return n < 0 ? "" : frame.toString("utf8", 14, 14 + n);
}

/** Complete frames (4-byte size, then the frame) taken off the front of `buf`; the rest left. */
function frames(state: { buf: Buffer }, chunk: Buffer): Buffer[] {
  state.buf = state.buf.length === 0 ? chunk : Buffer.concat([state.buf, chunk]);
  const out: Buffer[] = [];
  while (state.buf.length >= 4) {
    const size = state.buf.readInt32BE(0);
    if (state.buf.length < 4 + size) break;
    out.push(state.buf.subarray(0, 4 + size));
    state.buf = state.buf.subarray(4 + size);
  }
  return out;
}

export async function startKafkaProxy(port: number, brokerPort: number): Promise<KafkaProxy> {
  let outage: Outage | null = null;
  let downSince = 0;
  let down = false;
  let lost = 0;
  let refused = 0;
  const sockets = new Set<net.Socket>();
  const downLongEnough = () => outage?.kind === "produce answers" && refused >= outage.refuseAtLeast && Date.now() - downSince >= outage.refuseMs;

  const server = net.createServer((client) => {
    if (down) {
      refused++;
      if (downLongEnough()) {
        down = false;
        outage = null;
      }
      client.destroy();
      return;
    }
    const broker = net.connect(brokerPort, "127.0.0.1");
    sockets.add(client);
    sockets.add(broker);
    const cut = () => {
      client.destroy();
      broker.destroy();
      sockets.delete(client);
      sockets.delete(broker);
    };
    client.on("error", cut).on("close", cut);
    broker.on("error", cut).on("close", cut);
    const produceIds = new Set<number>();
    const requests = { buf: Buffer.alloc(0) };
    const responses = { buf: Buffer.alloc(0) };
    let held = 0;
    client.on("data", (chunk: Buffer) => {
      for (const f of frames(requests, chunk)) {
        const api = f.readInt16BE(4);
        if (outage?.kind === "requests" && api === outage.api && (outage.clientId === undefined || clientIdOf(f) === outage.clientId)) {
          lost++;
          if (outage.how === "unanswered") continue;
          cut();
          return;
        }
        if (api === PRODUCE) produceIds.add(f.readInt32BE(8));
        broker.write(f);
      }
    });
    broker.on("data", (chunk: Buffer) => {
      for (const f of frames(responses, chunk)) {
        const id = f.readInt32BE(4);
        const produce = produceIds.delete(id);
        // Once one answer is held, the ones after it wait behind it (the connection's order).
        if (outage?.kind === "produce answers" && (produce || held > 0)) {
          if (produce) {
            held++;
            lost++;
          }
          if (held === outage.hold) {
            down = true;
            downSince = Date.now();
            const ended = outage;
            // Up again at the latest after 15 s, also when the client stops trying.
            setTimeout(() => {
              if (outage !== ended) return;
              down = false;
              outage = null;
            }, 15_000).unref();
            cut();
            return;
          }
          continue;
        }
        client.write(f);
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  return {
    port,
    get lost() {
      return lost;
    },
    get refused() {
      return refused;
    },
    get up() {
      return outage === null;
    },
    loseProduceAnswers(n, o = {}) {
      refused = 0;
      lost = 0;
      outage = { kind: "produce answers", hold: n, refuseMs: o.refuseMs ?? 1500, refuseAtLeast: o.refuseAtLeast ?? 8 };
    },
    loseOffsetCommits(how = "cut") {
      refused = 0;
      lost = 0;
      outage = { kind: "requests", api: OFFSET_COMMIT, how };
    },
    loseJoins(clientId) {
      refused = 0;
      lost = 0;
      outage = { kind: "requests", api: JOIN_GROUP, clientId, how: "cut" };
    },
    restore() {
      down = false;
      outage = null;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
