/**
 * The listeners of Channel.onPutsCommitted: sink runners sleeping after an empty take. Every
 * channel keeps one; notify runs once per commit (or arrival), never per event.
 */
export class PutListeners {
  private listeners: (() => void)[] = [];

  /** Adds a listener; returns the function that removes it (Channel.onPutsCommitted's contract). */
  add(listener: () => void): () => void {
    this.listeners.push(listener);
    return () => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    };
  }

  notify(): void {
    const ls = this.listeners;
    for (let i = 0; i < ls.length; i++) ls[i]();
  }
}
