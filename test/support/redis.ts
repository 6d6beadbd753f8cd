import net from 'node:net';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * The Redis suites need a Redis server. CI always has one (.ci/run starts it), so there a missing server fails the
 * run; on a developer's fresh machine without Redis those suites are skipped with this reason instead.
 */
export async function redisSkipReason(): Promise<string | false> {
  const url = new URL(REDIS_URL);
  const reachable = await new Promise<boolean>((resolve) => {
    const socket = net.connect({ host: url.hostname, port: Number(url.port || 6379) });
    socket.setTimeout(1000);
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
    socket.once('error', () => resolve(false));
  });
  if (reachable || process.env.CI) return false;
  return `no Redis at ${REDIS_URL}: start one (redis-server) or set REDIS_URL to run the shared rate-limit suites`;
}
