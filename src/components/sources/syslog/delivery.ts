import { lookupService } from "node:dns/promises";
import { ChannelException } from "../../../core/errors.ts";
import type { Event } from "../../../core/event.ts";
import { BaseSource } from "../base.ts";

/** Backoff between retries of a batch the channel refused (grows to the maximum). */
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 2000;

/** Strips the IPv4-mapped prefix Node reports on dual-stack sockets. */
export function plainIp(address: string | undefined): string {
  if (!address) return "";
  return address.startsWith("::ffff:") && address.includes(".") ? address.slice(7) : address;
}

/** The client's host name by reverse lookup (hosts file, then DNS); the IP when none. */
export async function reverseName(ip: string, port: number): Promise<string> {
  try {
    return (await lookupService(ip, port)).hostname;
  } catch {
    return ip;
  }
}

/**
 * What the network sources share: handing a batch to the channel processor with Flume's
 * counters, and retrying a batch the channel refused (the caller keeps the socket paused
 * meanwhile, so the sender is slowed down instead of its messages being dropped as Flume does).
 */
export abstract class NetworkSource extends BaseSource {
  protected stopping = false;

  /**
   * Delivers one batch; false when (part of) it was given up (source stopping, or a failure
   * other than the channel's). A refused batch is retried in halves, down to single events,
   * so a batch larger than the channel's transactionCapacity still gets through.
   */
  protected async deliver(events: Event[], peer: string, retry = true): Promise<boolean> {
    const c = this.counter.values;
    c.EventReceivedCount += events.length;
    c.AppendBatchReceivedCount++;
    let wait = RETRY_FIRST_MS;
    let failures = 0;
    let size = events.length;
    let offset = 0;
    while (offset < events.length) {
      const batch = offset === 0 && size >= events.length ? events : events.slice(offset, offset + size);
      try {
        await this.getChannelProcessor().processEventBatch(batch);
        c.EventAcceptedCount += batch.length;
        offset += batch.length;
        wait = RETRY_FIRST_MS;
      } catch (err) {
        const left = events.length - offset;
        if (!(err instanceof ChannelException)) {
          c.GenericProcessingFail++;
          this.logger.error(`${this.describe()}: dropped ${left} events from ${peer}: ${(err as Error).message}`);
          return false;
        }
        c.ChannelWriteFail++;
        failures++;
        if (!retry || this.stopping) {
          this.logger.error(`${this.describe()}: dropped ${left} events from ${peer}: ${err.message}`);
          return false;
        }
        if (failures === 1) this.logger.warn(`${this.describe()}: channel refused ${batch.length} events from ${peer} (${err.message}); pausing this client and retrying`);
        if (size > 1) size = Math.ceil(size / 2);
        await this.clock.sleep(wait);
        wait = Math.min(wait * 2, RETRY_MAX_MS);
      }
    }
    c.AppendBatchAcceptedCount++;
    if (failures > 0) this.logger.info(`${this.describe()}: channel took the events from ${peer} after ${failures} retries`);
    return true;
  }

  protected abstract describe(): string;
}
