/** Something waiting to run in a shared transaction: the locks it takes decide what it may share one with. */
export interface Coalescable {
  readonly locks: readonly string[];
}

export interface CoalescerLimits {
  /** Shared transactions of one group running at once; later arrivals wait and go together in the next. */
  maxActive: number;
  /** Most commands in one shared transaction. */
  maxItems: number;
}

interface Group<I> {
  queue: I[];
  active: number;
}

/**
 * Groups commands that arrive while their group already has `maxActive` transactions running, so they run together
 * in the next one. A command alone (no queue) starts at once, so a quiet service pays no waiting. Two commands
 * taking the same lock never share a transaction (one would wait for the other forever); the later one waits for
 * the next. `runBatch` settles every item it is given and never rejects.
 */
export class TransactionCoalescer<I extends Coalescable> {
  private readonly groups = new Map<string, Group<I>>();

  constructor(
    private readonly runBatch: (items: I[]) => Promise<void>,
    private readonly limits: CoalescerLimits,
  ) {}

  submit(group: string, item: I): void {
    let state = this.groups.get(group);
    if (!state) {
      state = { queue: [], active: 0 };
      this.groups.set(group, state);
    }
    state.queue.push(item);
    this.pump(group, state);
  }

  /** True while the group has transactions running or commands waiting. */
  busy(group: string): boolean {
    return this.groups.has(group);
  }

  /** How many commands of a group wait for a transaction to start in. */
  waiting(group: string): number {
    return this.groups.get(group)?.queue.length ?? 0;
  }

  /** Commands waiting and shared transactions running, over every group (for metrics). */
  load(): { waiting: number; active: number } {
    let waiting = 0;
    let active = 0;
    for (const group of this.groups.values()) {
      waiting += group.queue.length;
      active += group.active;
    }
    return { waiting, active };
  }

  private pump(name: string, group: Group<I>): void {
    while (group.active < this.limits.maxActive && group.queue.length > 0) {
      const batch = this.take(group);
      group.active += 1;
      void this.runBatch(batch).finally(() => {
        group.active -= 1;
        if (group.active === 0 && group.queue.length === 0) this.groups.delete(name);
        else this.pump(name, group);
      });
    }
  }

  /** The oldest waiting items, up to the limit, leaving behind any that shares a lock with one already taken. */
  private take(group: Group<I>): I[] {
    const taken: I[] = [];
    const rest: I[] = [];
    const held = new Set<string>();
    for (const item of group.queue) {
      if (taken.length < this.limits.maxItems && !item.locks.some((lock) => held.has(lock))) {
        taken.push(item);
        for (const lock of item.locks) held.add(lock);
      } else {
        rest.push(item);
      }
    }
    group.queue = rest;
    return taken;
  }
}
