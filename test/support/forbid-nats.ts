// Preloaded by the JetStream config tests: fails the process if anything loads a NATS client
// package, which `flume --help` and `flume validate` must never need (it is imported lazily).
import { plugin } from "bun";

plugin({
  name: "forbid-nats",
  setup(build) {
    build.onLoad({ filter: /node_modules[\\/]@nats-io[\\/]/ }, (args) => {
      throw new Error(`a NATS package was loaded (${args.path}) on a path that must not need it`);
    });
  },
});
