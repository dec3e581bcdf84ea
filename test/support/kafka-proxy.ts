/**
 * A TCP proxy on 127.0.0.1 between Kafka clients and one broker (which advertises the proxy's
 * port, so every connection goes through it) that makes network faults:
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
 *   `refuseJoins(clientId)` answers them itself with GROUP_AUTHORIZATION_FAILED instead, and
 *   leaves the connection open (the client gives up at once, its other requests go on).
 * - `holdAnswers(api, clientId)` holds the broker's answers to one client's requests of one
 *   API until `releaseAnswers()` forwards them (with any other fault in effect beside it).
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
  /** `refused`: an error answer from the proxy (JoinGroup v7-v9; other versions are cut). */
  | { kind: "requests"; api: number; clientId?: string; how: RequestLoss | "refused" };

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
  /** Every JoinGroup request of client `clientId` until restore() is answered by the proxy with GROUP_AUTHORIZATION_FAILED. */
  refuseJoins(clientId: string): void;
  /** The answers to client `clientId`'s requests of `api` are held until releaseAnswers(). */
  holdAnswers(api: number, clientId: string): void;
  /** Forwards the held answers, in order, and holds no more. */
  releaseAnswers(): void;
  /** Answers held now. */
  readonly held: number;
  /** Ends the fault in effect, and forwards any held answers. */
  restore(): void;
  /** Whether the last fault is over. */
  readonly up: boolean;
  close(): Promise<void>;
}

export const PRODUCE = 0;
export const OFFSET_COMMIT = 8;
export const OFFSET_FETCH = 9;
const JOIN_GROUP = 11;
const GROUP_AUTHORIZATION_FAILED = 30;

/**
 * A JoinGroup answer (v7-v9, flexible) with `errorCode` for the request in `frame`, as a broker
 * sends one: generation -1, no protocol, leader and member id empty, no members. Null for
 * other versions.
 */
function joinGroupError(frame: Buffer, errorCode: number): Buffer | null {
  const version = frame.readInt16BE(6);
  if (version < 7 || version > 9) return null;
  const body = [
    ...int32(frame.readInt32BE(8)), 0, // correlation id, no tagged fields (response header v1)
    ...int32(0), (errorCode >> 8) & 0xff, errorCode & 0xff, ...int32(-1), // throttle, error, generation
    0, 0, 1, // protocol type and name null, leader ""
    ...(version >= 9 ? [0] : []), // skip_assignment false
    1, 1, 0, // member id "", no members, no tagged fields
  ];
  return Buffer.from([...int32(body.length), ...body]);
}

function int32(n: number): number[] {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return [...b];
}

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
  let hold: { api: number; clientId: string } | null = null;
  /** Held answers, with the connection each goes back on. */
  const heldAnswers: { client: net.Socket; frame: Buffer }[] = [];
  const releaseAnswers = () => {
    hold = null;
    for (const { client, frame } of heldAnswers.splice(0)) if (!client.destroyed) client.write(frame);
  };
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
    const heldIds = new Set<number>();
    const requests = { buf: Buffer.alloc(0) };
    const responses = { buf: Buffer.alloc(0) };
    let held = 0;
    client.on("data", (chunk: Buffer) => {
      for (const f of frames(requests, chunk)) {
        const api = f.readInt16BE(4);
        if (outage?.kind === "requests" && api === outage.api && (outage.clientId === undefined || clientIdOf(f) === outage.clientId)) {
          lost++;
          if (outage.how === "unanswered") continue;
          const answer = outage.how === "refused" && api === JOIN_GROUP ? joinGroupError(f, GROUP_AUTHORIZATION_FAILED) : null;
          if (answer) {
            client.write(answer);
            continue;
          }
          cut();
          return;
        }
        if (api === PRODUCE) produceIds.add(f.readInt32BE(8));
        if (hold && api === hold.api && clientIdOf(f) === hold.clientId) heldIds.add(f.readInt32BE(8));
        broker.write(f);
      }
    });
    broker.on("data", (chunk: Buffer) => {
      for (const f of frames(responses, chunk)) {
        const id = f.readInt32BE(4);
        if (heldIds.delete(id) && hold) {
          heldAnswers.push({ client, frame: f });
          continue;
        }
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
    refuseJoins(clientId) {
      refused = 0;
      lost = 0;
      outage = { kind: "requests", api: JOIN_GROUP, clientId, how: "refused" };
    },
    holdAnswers(api, clientId) {
      hold = { api, clientId };
    },
    releaseAnswers,
    get held() {
      return heldAnswers.length;
    },
    restore() {
      down = false;
      outage = null;
      releaseAnswers();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
