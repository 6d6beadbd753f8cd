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
