/**
 * A one-line progress bar on stderr, drawn only when stderr is a terminal (scripts and pipes see nothing of it).
 * A few lines of our own rather than a dependency: one bar, redrawn at most ten times a second.
 */
export interface Progress {
  add(count: number): void;
  done(): void;
}

const WIDTH = 30;
const NONE: Progress = { add: () => undefined, done: () => undefined };

export function progressBar(label: string, total: number, stream: NodeJS.WriteStream = process.stderr): Progress {
  if (!stream.isTTY) return NONE;
  let count = 0;
  let drawn = 0;
  const draw = () => {
    const share = total > 0 ? Math.min(1, count / total) : 1;
    const filled = Math.round(share * WIDTH);
    stream.write(
      `\r${label} [${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}] ${Math.floor(share * 100)}% ${count}/${total}`,
    );
    drawn = Date.now();
  };
  draw();
  return {
    add(n) {
      count += n;
      if (Date.now() - drawn >= 100) draw();
    },
    done() {
      draw();
      stream.write('\n');
    },
  };
}

/** Progress of a long run as lines (see progressLines). */
export interface ProgressLines {
  /** `done` of `total` (if known); shown if it is the first report, the last (`done === total`) or a while after. */
  report(done: number, total?: number): void;
}

/**
 * Progress as whole lines on stderr, on a terminal and a pipe alike (a log or a script keeps them): the first report,
 * then at most one every `everyMs`, and the one that reaches the total.
 */
export function progressLines(
  label: string,
  stream: NodeJS.WritableStream = process.stderr,
  everyMs = 5000,
  clock: () => number = Date.now,
): ProgressLines {
  let shown: number | undefined;
  return {
    report(done, total) {
      const now = clock();
      const last = total !== undefined && done >= total;
      if (!last && shown !== undefined && now - shown < everyMs) return;
      shown = now;
      const share = total === undefined ? '' : ` of ${total} (${total > 0 ? Math.floor((done / total) * 100) : 100}%)`;
      stream.write(`${label}: ${done}${share} events\n`);
    },
  };
}
