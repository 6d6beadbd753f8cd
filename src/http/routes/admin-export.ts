import { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { Type } from 'typebox';
import type { AppServices } from '../../bootstrap.js';
import { exportLines } from '../../commands/export/export-log.js';
import { parsePositionToken } from '../../commands/export/position-token.js';
import { ExportQuery } from '../../schemas/export.js';
import { staffOf } from '../admin-auth.js';
import { validationFailed } from '../errors.js';
import { adminErrorResponses, AdminWorkspaceParams } from '../schemas/admin.js';
import type { TypedApp } from '../typed-app.js';

const NDJSON = 'application/x-ndjson';

/** Whether an Accept-Encoding header accepts gzip (a `gzip` or `*` coding whose q is not 0). */
export function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false;
  return header.split(',').some((part) => {
    const [coding, ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    if (coding !== 'gzip' && coding !== 'x-gzip' && coding !== '*') return false;
    const q = params.find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

/**
 * The workspace's event log as NDJSON, the same lines `visa-crm export` writes (header, events in global order,
 * trailer with `next` and the head), streamed a page at a time; gzip when the request accepts it.
 */
export function registerAdminExportRoutes(app: TypedApp, services: AppServices): void {
  app.get(
    '/workspaces/:workspace/export',
    {
      schema: {
        tags: ['history'],
        operationId: 'exportWorkspaceLog',
        summary: "The workspace's whole event log as NDJSON (header, events in global order, trailer with the head)",
        description:
          'Streams one header line, one line per event and a trailer line with the count, `next` (pass it as `after` ' +
          'to continue later with nothing lost or repeated) and the workspace head, as `visa-crm export` writes them. ' +
          'Compressed with gzip (`Content-Encoding: gzip`) when Accept-Encoding allows it. A response without its ' +
          'trailer line was cut short.',
        params: AdminWorkspaceParams,
        querystring: ExportQuery,
        response: {
          200: {
            description: 'The export, one JSON document per line',
            content: { [NDJSON]: { schema: Type.String() } },
          },
          ...adminErrorResponses(400, 401, 403, 404),
        },
      },
    },
    async (request, reply) => {
      const { workspace } = staffOf(request);
      const after = request.query.after === undefined ? null : parsePositionToken(request.query.after);
      if (after === null && request.query.after !== undefined)
        throw validationFailed({ after: 'is not a position of the log (a transaction id beyond 64 bits)' });
      const lines = Readable.from(exportLines(services.pool, workspace, after, services.now()));
      reply.header('content-type', NDJSON).header('vary', 'accept-encoding');
      // fastify sends a stream as the body, piped; the 200 schema (a string) describes the document, not this value.
      const send = (body: Readable) => reply.send(body as unknown as string);
      if (!acceptsGzip(request.headers['accept-encoding'])) return send(lines);
      reply.header('content-encoding', 'gzip');
      const gzip = zlib.createGzip();
      lines.on('error', (error) => gzip.destroy(error));
      return send(lines.pipe(gzip));
    },
  );
}
