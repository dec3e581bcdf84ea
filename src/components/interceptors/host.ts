import { hostname, networkInterfaces } from "node:os";
import { defineComponent } from "../component.ts";
import { builtIn } from "../registry.ts";
import { HeaderInterceptor, type Interceptor } from "../../core/interceptor.ts";
import { preserveExistingProp } from "./preserve-existing.ts";

/** This host's first non-internal IPv4 address (what Java's InetAddress.getLocalHost() usually gives). */
export function localAddress(): string {
  const all = Object.values(networkInterfaces()).flat();
  const v4 = all.find((a) => a && a.family === "IPv4" && !a.internal);
  const v6 = all.find((a) => a && a.family === "IPv6" && !a.internal);
  return v4?.address ?? v6?.address ?? "127.0.0.1";
}

export const definition = defineComponent({
  ...builtIn.hostInterceptor,
  doc: "Adds the agent's host name or IP address as a header.",
  props: {
    preserveExisting: preserveExistingProp(false),
    useIP: { type: "boolean", default: true, doc: "Use the IP address (true) or the host name (false)." },
    hostHeader: { type: "string", default: "host", doc: "Name of the header to set." },
  },
  create(config): Interceptor {
    const host = config.useIP ? localAddress() : hostname();
    return new HeaderInterceptor(config.hostHeader, config.preserveExisting, () => host);
  },
});
