import { describe, expect, test } from "bun:test";
import { maxFds, virtualMemoryBytes } from "../../src/monitoring/process-metrics.ts";

describe("reading /proc for the process series", () => {
  test("virtual memory is field 23 of stat, counted after the command name even when that holds spaces and parentheses", () => {
    const rest = "S 1 1234 1234 0 -1 4194560 9876 0 0 0 12 3 0 0 20 0 9 0 55667 6713872384 7757 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
    expect(virtualMemoryBytes(`1234 (bun) ${rest}`)).toBe(6713872384);
    expect(virtualMemoryBytes(`1234 (flume (a1) x) ${rest}`)).toBe(6713872384);
    expect(virtualMemoryBytes(undefined)).toBeUndefined();
  });

  test("max fds is the soft limit of Max open files; unlimited gives no series", () => {
    const limits = "Limit                     Soft Limit           Hard Limit           Units     \nMax processes             95340                95340                processes \nMax open files            20000                1048576              files     \n";
    expect(maxFds(limits)).toBe(20000);
    expect(maxFds(limits.replace("20000", "unlimited"))).toBeUndefined();
    expect(maxFds(undefined)).toBeUndefined();
  });
});
