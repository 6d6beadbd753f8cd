import type { IncomingMessage } from 'node:http';
import { errorCodes, type FastifyBodyParser, type FastifyRequest } from 'fastify';
import { ApiError } from './errors.js';

/** The most of a refused body that is read (in bytes, and in time once it is over the limit) before the answer. */
export const LINGER_BYTES = 16 * 1024 * 1024;
export const LINGER_MS = 10_000;

type Done = NonNullable<Parameters<FastifyBodyParser<Buffer>>[2]>;

/**
 * A body parser that takes the whole body (`parse`), fed by a reader that keeps to `limit` bytes. A body over the
 * limit is read on and thrown away, up to LINGER_BYTES and LINGER_MS, and only then answered 413 (what nginx calls a
 * lingering close). Answered at once, the connection was closed while the client still sent, and the reset that
 * followed could destroy the answer before the client read it: Node's fetch of a 2 MB lead failed with EPIPE
 * instead of reading its 413. A body declared, or sent, beyond LINGER_BYTES is answered at once and its connection
 * closed: no client is owed more reading than that.
 */
export function readWithinLimit(limit: number, parse: FastifyBodyParser<Buffer>) {
  return (request: FastifyRequest, payload: IncomingMessage, done: Done): void => {
    const declared = Number(request.headers['content-length']);
    if (declared > LINGER_BYTES) return done(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE(), undefined);
    const chunks: Buffer[] = [];
    let received = 0;
    let overSince: number | undefined;
    let timer: NodeJS.Timeout | undefined;
    const finish = (error: Error | null) => {
      clearTimeout(timer);
      payload.off('data', onData);
      payload.off('end', onEnd);
      payload.off('error', finish);
      // The body's stream fails when the client goes before sending all of it ("aborted", ECONNRESET): the client's
      // doing, answered (to no one) as a refused request, never read as the database being out of reach.
      if (error) return done(bodyCutShort(), undefined);
      if (overSince !== undefined) return done(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE(), undefined);
      if (!Number.isNaN(declared) && received !== declared)
        return done(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH(), undefined);
      parse(request, Buffer.concat(chunks, received), done);
    };
    const tooLong = () => finish(null);
    function onData(chunk: Buffer) {
      received += chunk.length;
      if (received <= limit) return void chunks.push(chunk);
      if (overSince === undefined) {
        overSince = Date.now();
        chunks.length = 0;
        timer = setTimeout(tooLong, LINGER_MS);
      }
      if (received > LINGER_BYTES) finish(null);
    }
    function onEnd() {
      finish(null);
    }
    payload.on('data', onData);
    payload.on('end', onEnd);
    payload.on('error', finish);
  };
}

function bodyCutShort(): ApiError {
  return new ApiError(400, 'invalid_request', 'The connection closed before the whole request body arrived');
}
