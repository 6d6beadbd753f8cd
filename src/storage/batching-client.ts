import net from 'node:net';
import pg from 'pg';

/**
 * A pg client that holds its own socket (pg's documented `stream` option), so that statements submitted in one turn
 * of the event loop leave in one write. pg writes each pipelined statement as soon as it is submitted, one system
 * call each, and on this loopback each write also wakes the server: a lead capture made seven of them. Holding the
 * writes (Node's `cork`) until the turn's synchronous work and promise continuations are done sends them together.
 * Behind TLS pg writes through its own TLS socket, and holding this one changes nothing.
 */
export class BatchingClient extends pg.Client {
  private readonly socket: net.Socket;
  private holding = false;

  constructor(config?: pg.ClientConfig) {
    const socket = new net.Socket();
    super({ ...config, stream: () => socket });
    this.socket = socket;
  }

  /** Holds this turn's writes; they leave together once the turn's work is done (`process.nextTick`). */
  holdWrites(): void {
    if (this.holding) return;
    this.holding = true;
    this.socket.cork();
    process.nextTick(() => {
      this.holding = false;
      this.socket.uncork();
    });
  }
}
