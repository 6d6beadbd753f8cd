import type pg from 'pg';
import { chainFrom, contentDigest } from '../../events/chain.js';
import type { EventMetadata } from '../../events/types.js';

export const name = 'event hash chain';

// Every event's hash over its content and the previous event of its stream (src/events/chain.ts). The existing
// events get theirs below, stream by stream in revision order, before the column becomes NOT NULL: an INSERT that
// bypasses the store and leaves the hash out then fails instead of writing an unverifiable event.
export const sql = `
ALTER TABLE events ADD COLUMN hash bytea;
`;

// A frozen copy of the event row as this migration reads it: the migration must keep running against the table as it
// was then, whatever src/events/event-rows.ts's EventRow becomes later.
interface Row {
  id: string;
  stream_id: string;
  revision: number;
  type: string;
  tenant_id: string;
  sandbox: boolean;
  data: Record<string, unknown>;
  metadata: EventMetadata;
  created_at: Date;
}

const BATCH = 1000;

/** Backfills the hashes in (stream, revision) order, a batch at a time; the migration's transaction holds the table. */
export async function run(client: pg.ClientBase): Promise<void> {
  let after: { stream: string; revision: number } | null = null;
  let previous: { stream: string; hash: Buffer; revision: number } = {
    stream: '',
    hash: Buffer.alloc(0),
    revision: -1,
  };
  for (;;) {
    const page: pg.QueryResult<Row> = await client.query<Row>(
      `SELECT id, stream_id, revision, type, tenant_id, sandbox, data, metadata, created_at FROM events
        WHERE $1::text IS NULL OR (stream_id, revision) > ($1::text, $2::integer)
        ORDER BY stream_id, revision LIMIT $3`,
      [after?.stream ?? null, after?.revision ?? null, BATCH],
    );
    if (page.rows.length === 0) break;
    const hashes = page.rows.map((row) => {
      const continues = row.stream_id === previous.stream && row.revision === previous.revision + 1;
      // A stream whose revisions do not start at 0 or have a gap is chained as it stands; verify reports the gap.
      const from = continues ? previous.hash : Buffer.alloc(32);
      const digest = contentDigest({
        id: row.id,
        streamId: row.stream_id,
        type: row.type,
        tenantId: row.tenant_id,
        sandbox: row.sandbox,
        data: row.data,
        metadata: row.metadata,
        createdAt: row.created_at,
      });
      const [hash] = chainFrom(from, row.revision, [digest]);
      previous = { stream: row.stream_id, hash: hash!, revision: row.revision };
      return hash!.toString('hex');
    });
    await client.query(
      `UPDATE events SET hash = decode(h.hash, 'hex') FROM unnest($1::uuid[], $2::text[]) AS h(id, hash) WHERE events.id = h.id`,
      [page.rows.map((r) => r.id), hashes],
    );
    const last = page.rows[page.rows.length - 1]!;
    after = { stream: last.stream_id, revision: last.revision };
  }
  await client.query(
    'ALTER TABLE events ALTER COLUMN hash SET NOT NULL, ADD CONSTRAINT events_hash_length CHECK (octet_length(hash) = 32)',
  );
}
