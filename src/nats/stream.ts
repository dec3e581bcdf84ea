/**
 * Finds or creates the stream and the durable consumer a component uses. An existing stream
 * or consumer is used as it is (other agents share it); settings that differ are logged.
 */
import type { ConsumerInfo, JetStreamManager, StreamInfo } from "@nats-io/jetstream";
import type { Logger } from "../core/logger.ts";
import type { JetStreamModule } from "./connection.ts";
import { JetStreamSetupError, messageOf } from "./errors.ts";
import type { ConsumerSettings, StreamSettings } from "./settings.ts";

const NANOS_PER_MS = 1_000_000;

function isNotFound(err: unknown): boolean {
  const e = err as { name?: string; code?: number; message?: string };
  return e?.name === "StreamNotFoundError" || e?.name === "ConsumerNotFoundError" || e?.code === 10059 || e?.code === 10014 || /not found/i.test(String(e?.message));
}

/** Whether a stream subject (maybe with * and > wildcards) captures a plain subject. */
export function subjectCaptures(pattern: string, subject: string): boolean {
  const p = pattern.split(".");
  const s = subject.split(".");
  for (let i = 0; i < p.length; i++) {
    if (p[i] === ">") return s.length > i;
    if (i >= s.length) return false;
    if (p[i] !== "*" && p[i] !== s[i]) return false;
  }
  return p.length === s.length;
}

export async function ensureStream(
  jsm: JetStreamManager,
  mod: JetStreamModule,
  s: StreamSettings,
  ctx: { label: string; logger: Logger; publishes: boolean },
): Promise<StreamInfo> {
  let info: StreamInfo;
  try {
    info = await jsm.streams.info(s.stream);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    if (!s.createStream) throw new JetStreamSetupError(`${ctx.label}: stream ${s.stream} does not exist and create-stream is false: create it, or set create-stream = true`);
    try {
      info = await jsm.streams.add({
        name: s.stream,
        subjects: [s.subject],
        num_replicas: s.replicas,
        storage: s.storage === "memory" ? mod.StorageType.Memory : mod.StorageType.File,
        retention: s.retention === "limits" ? mod.RetentionPolicy.Limits : s.retention === "interest" ? mod.RetentionPolicy.Interest : mod.RetentionPolicy.Workqueue,
        max_msgs: s.maxMsgs,
        max_bytes: s.maxBytes,
        max_age: s.maxAge * 1000 * NANOS_PER_MS,
        discard: s.discard === "old" ? mod.DiscardPolicy.Old : mod.DiscardPolicy.New,
        duplicate_window: s.duplicateWindow * NANOS_PER_MS,
      });
      ctx.logger.info(`${ctx.label}: created stream ${s.stream} (subject ${s.subject}, ${s.replicas} replica(s), ${s.storage} storage, ${s.retention} retention)`);
    } catch (addErr) {
      // Another agent may have created it a moment ago.
      try {
        info = await jsm.streams.info(s.stream);
      } catch {
        throw new JetStreamSetupError(`${ctx.label}: cannot create stream ${s.stream}: ${messageOf(addErr)}`, { cause: addErr });
      }
    }
  }
  const c = info.config;
  if (ctx.publishes && !(c.subjects ?? []).some((p) => subjectCaptures(p, s.subject))) {
    throw new JetStreamSetupError(`${ctx.label}: stream ${s.stream} does not capture subject ${s.subject} (its subjects: ${(c.subjects ?? []).join(", ") || "none"}); set subject to one of them`);
  }
  const differs: string[] = [];
  if (c.num_replicas !== s.replicas) differs.push(`replicas ${c.num_replicas} (configured ${s.replicas})`);
  if (c.max_msgs !== s.maxMsgs) differs.push(`max-msgs ${c.max_msgs} (configured ${s.maxMsgs})`);
  if (c.max_bytes !== s.maxBytes) differs.push(`max-bytes ${c.max_bytes} (configured ${s.maxBytes})`);
  if (String(c.retention) !== s.retention) differs.push(`retention ${c.retention} (configured ${s.retention})`);
  if (String(c.discard) !== s.discard) differs.push(`discard ${c.discard} (configured ${s.discard})`);
  if (differs.length > 0) ctx.logger.warn(`${ctx.label}: stream ${s.stream} exists with ${differs.join(", ")}; using it as it is`);
  return info;
}

export async function ensureConsumer(
  jsm: JetStreamManager,
  mod: JetStreamModule,
  stream: string,
  c: ConsumerSettings,
  ctx: { label: string; logger: Logger; filterSubject?: string },
): Promise<ConsumerInfo> {
  try {
    const info = await jsm.consumers.info(stream, c.consumer);
    const cfg = info.config;
    const differs: string[] = [];
    if (cfg.ack_wait !== undefined && cfg.ack_wait !== c.ackWait * NANOS_PER_MS) differs.push(`ack-wait ${cfg.ack_wait / NANOS_PER_MS} ms (configured ${c.ackWait})`);
    if ((cfg.max_deliver ?? -1) !== c.maxDeliver) differs.push(`max-deliver ${cfg.max_deliver} (configured ${c.maxDeliver})`);
    if (cfg.ack_policy !== mod.AckPolicy.Explicit) throw new JetStreamSetupError(`${ctx.label}: consumer ${c.consumer} of stream ${stream} has ack policy ${cfg.ack_policy}; Flume TS needs explicit acks (use another consumer name)`);
    if (differs.length > 0) ctx.logger.warn(`${ctx.label}: consumer ${c.consumer} exists with ${differs.join(", ")}; using it as it is`);
    return info;
  } catch (err) {
    if (err instanceof JetStreamSetupError || !isNotFound(err)) throw err;
  }
  try {
    const info = await jsm.consumers.add(stream, {
      durable_name: c.consumer,
      ack_policy: mod.AckPolicy.Explicit,
      ack_wait: c.ackWait * NANOS_PER_MS,
      max_deliver: c.maxDeliver,
      max_ack_pending: c.maxAckPending,
      deliver_policy: c.deliverPolicy === "new" ? mod.DeliverPolicy.New : mod.DeliverPolicy.All,
      ...(ctx.filterSubject ? { filter_subject: ctx.filterSubject } : {}),
    });
    ctx.logger.info(`${ctx.label}: created durable consumer ${c.consumer} on stream ${stream}`);
    return info;
  } catch (err) {
    try {
      return await jsm.consumers.info(stream, c.consumer);
    } catch {
      throw new JetStreamSetupError(`${ctx.label}: cannot create consumer ${c.consumer} on stream ${stream}: ${messageOf(err)}`, { cause: err });
    }
  }
}
