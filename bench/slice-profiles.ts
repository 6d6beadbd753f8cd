/*
 * Main-thread CPU profiles of bench:leads' interleaved slices, kept apart by mode (BENCH_PROFILE_DIR=folder).
 *
 * Comparing two runs of separate processes told little on this machine: everything else a process does moved by
 * more between runs than sealing costs. The slices alternate the two modes within one process, so profiling each
 * slice and adding up each mode's profiles compares them under the same minutes, JIT and heap. Printed: the main
 * thread's busy time per request (samples that were not idle) per mode, the time under a few functions of the
 * capture path, and the functions whose own time per request differs most. The raw profiles are written to the
 * folder (open them in Chrome's DevTools). Sampling costs both modes alike (a sample every 200 µs).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Session } from 'node:inspector/promises';

export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
export interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Functions whose time, with everything they call, is shown per mode. */
const UNDER = ['appendNewStream', 'sealEvent', 'contentDigest', '(garbage collector)'];

interface ModeTotals {
  requests: number;
  /** Own time by function (µs). */
  self: Map<string, number>;
  /** Time with callees, for the functions of UNDER (µs). */
  under: Map<string, number>;
  busy: number;
}

export class SliceProfiler {
  private readonly session = new Session();
  private readonly modes = new Map<string, ModeTotals>();
  private slice = 0;

  private readonly folder: string;
  constructor(folder: string) {
    this.folder = folder;
    mkdirSync(folder, { recursive: true });
    this.session.connect();
  }

  async start(): Promise<void> {
    await this.session.post('Profiler.enable');
    await this.session.post('Profiler.setSamplingInterval', { interval: 200 });
    await this.session.post('Profiler.start');
  }

  /** Stops the slice's profile and adds it to `mode`'s, with the requests the slice completed. */
  async stop(mode: string, requests: number): Promise<void> {
    const { profile } = (await this.session.post('Profiler.stop')) as { profile: Profile };
    this.slice += 1;
    writeFileSync(path.join(this.folder, `${mode}-${this.slice}.cpuprofile`), JSON.stringify(profile));
    const totals = this.modes.get(mode) ?? { requests: 0, self: new Map(), under: new Map(), busy: 0 };
    totals.requests += requests;
    addProfile(profile, totals);
    this.modes.set(mode, totals);
  }

  /** Lines comparing mode `a` with mode `b` (per request). */
  report(a: string, b: string, top = 12): string[] {
    const x = this.modes.get(a);
    const y = this.modes.get(b);
    if (!x || !y) return [];
    const per = (t: ModeTotals, us: number | undefined) => (us ?? 0) / Math.max(1, t.requests);
    const lines = [
      `main thread busy per request: ${a} ${per(x, x.busy).toFixed(1)} µs, ${b} ${per(y, y.busy).toFixed(1)} µs` +
        ` (profiles in ${this.folder})`,
      `  with callees, ${a} / ${b}: ` +
        UNDER.map((f) => `${f} ${per(x, x.under.get(f)).toFixed(1)} / ${per(y, y.under.get(f)).toFixed(1)}`).join(', '),
    ];
    const names = new Set([...x.self.keys(), ...y.self.keys()]);
    const differences = [...names]
      .filter((name) => !name.startsWith('(idle)'))
      .map((name) => ({ name, d: per(x, x.self.get(name)) - per(y, y.self.get(name)) }))
      .sort((p, q) => Math.abs(q.d) - Math.abs(p.d))
      .slice(0, top);
    for (const { name, d } of differences)
      lines.push(`  ${`${d >= 0 ? '+' : ''}${d.toFixed(2)}`.padStart(7)} µs  ${name}`);
    return lines;
  }

  close(): void {
    this.session.disconnect();
  }
}

function addProfile(profile: Profile, totals: ModeTotals): void {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  profile.samples.forEach((sampled, i) => {
    const us = profile.timeDeltas[i] ?? 0;
    const frame = byId.get(sampled)!.callFrame;
    const name = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/.*\/(src|node_modules)\//, '$1/')}:${frame.lineNumber}`;
    totals.self.set(name, (totals.self.get(name) ?? 0) + us);
    if (frame.functionName !== '(idle)') totals.busy += us;
    const seen = new Set<string>();
    for (let id: number | undefined = sampled; id !== undefined; id = parent.get(id)) {
      const fn = byId.get(id)!.callFrame.functionName;
      if (UNDER.includes(fn) && !seen.has(fn)) {
        seen.add(fn);
        totals.under.set(fn, (totals.under.get(fn) ?? 0) + us);
      }
    }
  });
}
