// Transaction state machine (Flume's BasicTransactionSemantics / TestBasicChannelSemantics):
// NEW -> OPEN -> COMPLETED -> CLOSED, and every call out of order is a clear state error.
import { describe, expect, test } from "bun:test";
import { ChannelException, TransactionStateError } from "../../src/core/errors.ts";
import { bodyText, createEvent, type Event } from "../../src/core/event.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import { BasicTransaction } from "../../src/core/transaction.ts";
import { VirtualClock } from "../../src/core/virtual-clock.ts";
import { watch } from "../support/core.ts";

function channel(): MemoryChannel {
  return new MemoryChannel("c1");
}

const ev = createEvent("x");

/** A transaction whose hooks fail on demand, to check the state machine around failures. */
class FaultyTransaction extends BasicTransaction {
  failCommit = false;
  failRollback = false;
  failClose = false;
  protected doPut(_event: Event): void {}
  protected doTake(): Event | null {
    return null;
  }
  protected doCommit(): void {
    if (this.failCommit) throw new ChannelException("commit failed");
  }
  protected doRollback(): void {
    if (this.failRollback) throw new Error("rollback failed");
  }
  protected override doClose(): void {
    if (this.failClose) throw new Error("close failed");
  }
}

describe("transaction state machine", () => {
  test("a new transaction is NEW; begin opens it; commit completes it; close closes it", async () => {
    const tx = channel().getTransaction();
    expect(tx.state).toBe("NEW");
    tx.begin();
    expect(tx.state).toBe("OPEN");
    await tx.commit();
    expect(tx.state).toBe("COMPLETED");
    tx.close();
    expect(tx.state).toBe("CLOSED");
  });

  test("every getTransaction() is a new transaction", () => {
    const c = channel();
    const a = c.getTransaction();
    const b = c.getTransaction();
    expect(a).not.toBe(b);
    expect(a.id).not.toBe(b.id);
  });

  test("begin works only once: on OPEN, COMPLETED and CLOSED it throws", async () => {
    const tx = channel().getTransaction();
    tx.begin();
    expect(() => tx.begin()).toThrow(TransactionStateError);
    expect(() => tx.begin()).toThrow("begin() called when transaction is OPEN");
    await tx.commit();
    expect(() => tx.begin()).toThrow("begin() called when transaction is COMPLETED");
    tx.close();
    expect(() => tx.begin()).toThrow("begin() called when transaction is CLOSED");
  });

  test("put outside an open transaction throws (before begin, after commit, rollback, close)", async () => {
    const c = channel();
    const t1 = c.getTransaction();
    expect(() => t1.put(ev)).toThrow(TransactionStateError);
    expect(() => t1.put(ev)).toThrow("put() called when transaction is NEW: call begin() first");
    t1.begin();
    t1.put(ev);
    await t1.commit();
    expect(() => t1.put(ev)).toThrow("put() called when transaction is COMPLETED");
    t1.close();
    expect(() => t1.put(ev)).toThrow("put() called when transaction is CLOSED");

    const t2 = c.getTransaction();
    t2.begin();
    t2.put(ev);
    await t2.rollback();
    expect(() => t2.put(ev)).toThrow(TransactionStateError);
    t2.close();
    expect(() => t2.put(ev)).toThrow(TransactionStateError);
  });

  test("take outside an open transaction throws (before begin, after commit, rollback, close)", async () => {
    const c = channel();
    const t1 = c.getTransaction();
    expect(() => t1.take()).toThrow("take() called when transaction is NEW: call begin() first");
    t1.begin();
    expect(t1.take()).toBeNull();
    await t1.commit();
    expect(() => t1.take()).toThrow("take() called when transaction is COMPLETED");
    t1.close();
    expect(() => t1.take()).toThrow("take() called when transaction is CLOSED");

    const t2 = c.getTransaction();
    t2.begin();
    t2.take();
    await t2.rollback();
    expect(() => t2.take()).toThrow(TransactionStateError);
    t2.close();
    expect(() => t2.take()).toThrow(TransactionStateError);
  });

  test("commit only an open transaction: not before begin, not twice, not after rollback or close", async () => {
    const c = channel();
    const t1 = c.getTransaction();
    await expect(t1.commit()).rejects.toThrow("commit() called when transaction is NEW");
    t1.begin();
    await t1.commit();
    await expect(t1.commit()).rejects.toThrow("commit() called when transaction is COMPLETED");
    t1.close();
    await expect(t1.commit()).rejects.toThrow(TransactionStateError);

    const t2 = c.getTransaction();
    t2.begin();
    await t2.rollback();
    await expect(t2.commit()).rejects.toThrow(TransactionStateError);
  });

  test("rollback only an open transaction: not before begin, not twice, not after commit or close", async () => {
    const c = channel();
    const t1 = c.getTransaction();
    await expect(t1.rollback()).rejects.toThrow("rollback() called when transaction is NEW");
    t1.begin();
    await t1.rollback();
    await expect(t1.rollback()).rejects.toThrow("rollback() called when transaction is COMPLETED");
    t1.close();
    await expect(t1.rollback()).rejects.toThrow("rollback() called when transaction is CLOSED");

    const t2 = c.getTransaction();
    t2.begin();
    await t2.commit();
    await expect(t2.rollback()).rejects.toThrow(TransactionStateError);
  });

  test("close on an OPEN transaction says: commit or rollback first", () => {
    const tx = channel().getTransaction();
    tx.begin();
    expect(() => tx.close()).toThrow(TransactionStateError);
    expect(() => tx.close()).toThrow("commit or rollback first");
    expect(tx.state).toBe("OPEN");
  });

  test("close is allowed on a NEW transaction and after commit or rollback", async () => {
    const c = channel();
    const fresh = c.getTransaction();
    fresh.close();
    expect(fresh.state).toBe("CLOSED");
    const rolled = c.getTransaction();
    rolled.begin();
    await rolled.rollback();
    rolled.close();
    expect(rolled.state).toBe("CLOSED");
  });

  test("closing a CLOSED transaction again is harmless (Flume throws; here cleanup code may close twice)", async () => {
    const tx = channel().getTransaction();
    tx.begin();
    await tx.commit();
    tx.close();
    tx.close();
    expect(tx.state).toBe("CLOSED");
  });

  test("a failed commit leaves the transaction OPEN: close refuses, rollback then close work", async () => {
    const tx = new FaultyTransaction();
    tx.failCommit = true;
    tx.begin();
    tx.put(ev);
    await expect(tx.commit()).rejects.toThrow(ChannelException);
    expect(tx.state).toBe("OPEN");
    expect(() => tx.close()).toThrow("commit or rollback first");
    await tx.rollback();
    expect(tx.state).toBe("COMPLETED");
    tx.close();
    expect(tx.state).toBe("CLOSED");
  });

  test("a rollback that throws still completes the transaction (a second rollback is a state error)", async () => {
    const tx = new FaultyTransaction();
    tx.failRollback = true;
    tx.begin();
    await expect(tx.rollback()).rejects.toThrow("rollback failed");
    expect(tx.state).toBe("COMPLETED");
    await expect(tx.rollback()).rejects.toThrow(TransactionStateError);
    tx.close();
  });

  test("a close whose cleanup throws still leaves the transaction CLOSED", async () => {
    const tx = new FaultyTransaction();
    tx.failClose = true;
    tx.begin();
    await tx.commit();
    expect(() => tx.close()).toThrow("close failed");
    expect(tx.state).toBe("CLOSED");
    expect(() => tx.begin()).toThrow(TransactionStateError);
  });

  test("while a commit waits for space, put, take, commit, rollback and close are refused", async () => {
    const clock = new VirtualClock();
    const c = new MemoryChannel("c1", { capacity: 1, transactionCapacity: 1 }, clock);
    const first = c.getTransaction();
    first.begin();
    first.put(ev);
    await first.commit();
    first.close();

    const tx = c.getTransaction();
    tx.begin();
    tx.put(ev);
    const pending = watch(tx.commit());
    await clock.flush();
    expect(pending.done).toBe(false);
    expect(() => tx.put(ev)).toThrow("while the transaction is committing");
    expect(() => tx.take()).toThrow(TransactionStateError);
    expect(() => tx.close()).toThrow("commit or rollback first");
    await expect(tx.commit()).rejects.toThrow(TransactionStateError);
    await expect(tx.rollback()).rejects.toThrow("COMMITTING");
    await clock.advance(3000);
    await pending.promise;
    expect(pending.error).toBeInstanceOf(ChannelException);
    await tx.rollback();
    tx.close();
  });

  test("events committed one by one come back in order, as the same objects (happy path)", async () => {
    const c = channel();
    const sent = Array.from({ length: 20 }, (_, i) => createEvent(`e${i}`, { i: String(i) }));
    for (const e of sent) {
      const tx = c.getTransaction();
      tx.begin();
      tx.put(e);
      await tx.commit();
      tx.close();
    }
    for (const e of sent) {
      const tx = c.getTransaction();
      tx.begin();
      const got = tx.take();
      expect(got).toBe(e);
      await tx.commit();
      tx.close();
    }
    expect(bodyText(sent[3])).toBe("e3");
  });

  test("headers and an empty body survive the channel unchanged", async () => {
    const c = channel();
    const e = createEvent(new Uint8Array(0), { test_key: "", host: "h1" });
    const put = c.getTransaction();
    put.begin();
    put.put(e);
    await put.commit();
    put.close();
    const take = c.getTransaction();
    take.begin();
    const got = take.take();
    await take.commit();
    take.close();
    expect(got?.headers).toEqual({ test_key: "", host: "h1" });
    expect(got?.body.length).toBe(0);
  });
});
