import { describe, expect, test } from "bun:test";
import { drain, openChannel, putAll, range, takeSome, tempDirsAfterEach } from "../../../support/file-channel.ts";

const temp = tempDirsAfterEach();

describe("file channel restart", () => {
  test("pending events come back after a clean restart, in order, with headers", async () => {
    const dir = temp();
    const a = await openChannel(dir);
    await putAll(a.ch, range(0, 500), { host: "h1" });
    await putAll(a.ch, range(500, 500));
    const first = await takeSome(a.ch, 100);
    expect(first.map((e) => new TextDecoder().decode(e.body))).toEqual(range(0, 100));
    expect(first[0].headers).toEqual({ host: "h1" });
    await a.ch.stop();

    const b = await openChannel(dir);
    expect(b.ch.size).toBe(900);
    expect(b.ch.counter.snapshot().ChannelSize).toBe("900");
    const tx = b.ch.getTransaction();
    tx.begin();
    const e = tx.take()!;
    expect(new TextDecoder().decode(e.body)).toBe("e100");
    expect(e.headers).toEqual({ host: "h1" });
    await tx.rollback();
    tx.close();
    expect(await drain(b.ch)).toEqual(range(100, 900));
    await b.ch.stop();
  });

  test("events taken by an uncommitted transaction come back after a restart without checkpoint", async () => {
    const dir = temp();
    const a = await openChannel(dir, { checkpointOnClose: false });
    await putAll(a.ch, range(0, 50));
    const tx = a.ch.getTransaction();
    tx.begin();
    for (let i = 0; i < 20; i++) tx.take();
    // Never committed: the process "dies" here (stop without checkpoint, take still open).
    await a.ch.stop();

    const b = await openChannel(dir);
    expect(await drain(b.ch)).toEqual(range(0, 50));
    await b.ch.stop();
  });
});
