import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import pg from 'pg';
import t from 'tap';
import { exportLines } from '../../src/commands/export/export-log.js';
import { importExport } from '../../src/commands/export/import-log.js';
import { ImportRefusedError } from '../../src/commands/export/line-checker.js';
import { contentDigest, GENESIS, link, workspaceHead, type StreamHead } from '../../src/events/chain.js';
import { anchorText } from '../../src/events/verify-chain.js';
import { projections } from '../../src/projections/index.js';
import type { ExportEvent as ExportLine } from '../../src/schemas/export.js';
import type { Workspace } from '../../src/workspaces/workspace.js';
import { appFixture, fixtureFor, type AppFixture } from '../applications/support.js';
import { seedWorkspace } from '../support/app.js';
import { makeBusy } from '../support/busy-workspace.js';
import { freshDatabase } from '../support/db.js';
import { each, tempDir } from '../support/export.js';
import { runCli } from '../support/cli.js';
import { checkProperty } from '../support/properties.js';

/** An event line, its data open to reading. */
type ExportEvent = Omit<ExportLine, 'data'> & { data: Record<string, unknown> };

// An import changes nothing outside its own workspace. Workspace B is imported (a clean export)
// into a database; then exports of workspace A with one crafted line each (hashes and trailer recomputed with the
// project's own chain functions, as a forger would) are imported beside it: each is refused naming the crafted
// line, and every row of B (a digest of every table) is as before.

async function exportOf(f: AppFixture, workspace: Workspace): Promise<string[]> {
  let text = '';
  for await (const chunk of exportLines(f.app.pool, workspace, null, new Date())) text += chunk;
  return text.trimEnd().split('\n');
}

// A CLI run starts a Node process (seconds on a loaded two-core machine).
t.setTimeout(300_000);

/** A digest of every row of a workspace: each table with a tenant_id, endpoint health, the workspace row. */
async function workspaceDigest(pool: pg.Pool, tenantId: string): Promise<string> {
  const tables = await pool.query<{ table_name: string }>(
    `SELECT table_name FROM information_schema.columns
      WHERE table_schema = 'public' AND column_name = 'tenant_id' ORDER BY table_name`,
  );
  const hash = createHash('sha256');
  for (const { table_name: table } of tables.rows) {
    const rows = await pool.query<{ row: string }>(
      `SELECT to_jsonb(t)::text AS row FROM ${pg.escapeIdentifier(table)} t WHERE tenant_id = $1 ORDER BY 1`,
      [tenantId],
    );
    hash.update(`${table}\n${rows.rows.map((r) => r.row).join('\n')}\n`);
  }
  const rest = await pool.query<{ row: string }>(
    `SELECT to_jsonb(h)::text AS row FROM webhook_endpoint_health h
      WHERE endpoint_id IN (SELECT id FROM webhook_endpoints WHERE tenant_id = $1)
     UNION ALL SELECT to_jsonb(w)::text FROM workspaces w WHERE id = $1 ORDER BY 1`,
    [tenantId],
  );
  hash.update(rest.rows.map((r) => r.row).join('\n'));
  return hash.digest('hex');
}

/** Re-chains an export after lines were added: every hash, position and the trailer, as the service computes them. */
function rechain(header: string, events: ExportEvent[]): string[] {
  const heads = new Map<string, StreamHead>();
  const lines = events.map((event, i) => {
    const previous = heads.get(event.stream);
    const revision = (previous?.revision ?? -1) + 1;
    const digest = contentDigest({
      id: event.id,
      streamId: event.stream,
      type: event.type,
      tenantId: event.tenant,
      sandbox: event.sandbox,
      data: event.data,
      metadata: event.metadata as never,
      createdAt: new Date(event.time),
    });
    const hash = link(previous?.hash ?? GENESIS, revision, digest);
    heads.set(event.stream, { streamId: event.stream, revision, hash });
    return JSON.stringify({ ...event, revision, hash: hash.toString('hex'), position: `${5000 + i}/${i + 1}` });
  });
  const next = events.length === 0 ? '0/0' : `${5000 + events.length - 1}/${events.length}`;
  const head = workspaceHead(heads.values());
  const [txId, position] = next.split('/');
  const trailer = {
    trailer: true,
    events: events.length,
    next,
    head,
    anchor: anchorText(head, { txId: txId!, position: Number(position) }),
  };
  return [header, ...lines, JSON.stringify(trailer)];
}

t.test(
  'an import naming another workspace’s streams, ids or secrets is refused at that line; B is unchanged',
  async (t) => {
    const f = await appFixture(t); // workspace B
    await makeBusy(f, 4);
    const a = fixtureFor(f.app, await seedWorkspace(f.app)); // workspace A
    await a.lead();
    for (const url of ['https://hooks.example.org/a1', 'https://hooks.example.org/a2'])
      await a.app.request('/v1/webhooks', { method: 'POST', key: a.ws.live, json: { url, events: ['lead.created'] } });
    const bLines = await exportOf(f, f.ws.workspace);
    const aLines = await exportOf(a, a.ws.workspace);
    const bEvents = bLines.slice(1, -1).map((l) => JSON.parse(l) as ExportEvent);
    const aEvents = aLines.slice(1, -1).map((l) => JSON.parse(l) as ExportEvent);
    t.equal(aEvents.filter((e) => e.type === 'webhook_endpoint.created').length, 2, 'A has two endpoints');

    const target = await freshDatabase(t);
    const options = { webhookSecrets: f.app.services.secretBox.webhookSecrets };
    const importInto = (lines: string[]) =>
      importExport(
        target.pool,
        projections,
        [{ name: 'crafted', lines: each(lines) }],
        f.app.services.personalData,
        options,
      );
    await importInto(bLines);
    const B = f.ws.workspace.id;
    const before = await workspaceDigest(target.pool, B);

    const bLead = bEvents.find((e) => e.type === 'lead.created')!;
    const bLeadId = bLead.stream.slice('lead-'.length);
    const bEndpoint = bEvents.find((e) => e.type === 'webhook_endpoint.created')!;
    const bEndpointId = String(bEndpoint.data.endpoint_id);
    const aLead = aEvents.find((e) => e.type === 'lead.created')!;
    const [aFirst, aSecond] = aEvents.filter((e) => e.type === 'webhook_endpoint.created');
    const A = a.ws.workspace.id;
    const template = (stream: string, type: string, data: Record<string, unknown>): ExportEvent => ({
      ...aLead,
      id: randomUUID(),
      stream,
      type,
      data,
      time: new Date(Date.parse(aEvents.at(-1)!.time) + 1000).toISOString(),
      personal_key: undefined,
    });
    const hijacked = (id: string) => ({
      payload: { ...(bLead.data.payload as Record<string, unknown>), id, full_name: 'HIJACKED BY TENANT A' },
    });

    /** Each crafted line: where it may go (anywhere, or after every event of A) and the event. */
    const crafted = fc.oneof(
      fc.string({ minLength: 1, maxLength: 8 }).map((prefix) => ({
        what: `a lead.updated of a stream ${prefix}… before B's lead id`,
        event: template(`${prefix}${bLeadId}`, 'lead.updated', hijacked(bLeadId)),
      })),
      fc.constantFrom('lead.updated', 'lead.note_added').map((type) => ({
        what: `a ${type} of B's lead spelt in upper case`,
        event: template(`lead-${bLeadId.toUpperCase()}`, type, {
          ...hijacked(bLeadId.toUpperCase()),
          at: new Date().toISOString(),
          note: 'x',
          author: { type: 'system', name: 'x' },
        }),
      })),
      fc.constant({
        what: "A's own lead stream naming B's lead id in its payload",
        event: template(aLead.stream, 'lead.updated', hijacked(bLeadId)),
      }),
      fc
        .record({
          type: fc.constantFrom(
            'webhook_endpoint.paused',
            'webhook_endpoint.deleted',
            'webhook_endpoint.secret_rotated',
            'webhook_endpoint.resumed',
          ),
          ownStream: fc.boolean(),
          upper: fc.boolean(),
        })
        .map(({ type, ownStream, upper }) => {
          const id = upper ? bEndpointId.toUpperCase() : bEndpointId;
          return {
            what: `a ${type} naming B's endpoint${upper ? ' in upper case' : ''}${ownStream ? " in A's endpoint stream" : ''}`,
            event: template(ownStream ? aFirst!.stream : `webhook-endpoint-${id}`, type, {
              endpoint_id: id,
              reason: 'hijacked',
              consecutive_failures: 50,
              sealed_secret: aFirst!.data.sealed_secret,
              previous_sealed_secret: aFirst!.data.sealed_secret,
              previous_secret_valid_until: new Date().toISOString(),
            }),
          };
        }),
      fc.constantFrom('A', 'B').map((from) => {
        const source = from === 'A' ? aSecond! : bEndpoint;
        return {
          what: `a secret moved from ${from}'s endpoint ${String(source.data.endpoint_id)} onto A's other endpoint`,
          event: template(aFirst!.stream, 'webhook_endpoint.secret_rotated', {
            endpoint_id: aFirst!.data.endpoint_id,
            sealed_secret: source.data.sealed_secret,
            previous_sealed_secret: aFirst!.data.sealed_secret,
            previous_secret_valid_until: new Date().toISOString(),
          }),
        };
      }),
      fc.uuid({ version: 4 }).map((id) => ({
        what: "an application of A opened for B's lead",
        event: template(`application-${id}`, 'application.opened', {
          ...bEvents.find((e) => e.type === 'application.opened')!.data,
          application_id: id,
          lead_id: bLeadId,
        }),
      })),
    );

    await checkProperty(
      t,
      'crafted imports beside B',
      fc.asyncProperty(crafted, fc.nat(), async ({ what, event }, at) => {
        const forStream = aEvents.map((e) => e.stream).lastIndexOf(event.stream);
        const index = forStream + 1 + (at % (aEvents.length - forStream));
        const events = [...aEvents];
        events.splice(index, 0, { ...event, tenant: A });
        const lines = rechain(aLines[0]!, events);
        let refusal: unknown = null;
        try {
          await importInto(lines);
        } catch (error) {
          refusal = error;
        }
        const after = await workspaceDigest(target.pool, B);
        if (after !== before) throw new Error(`${what}: B's rows changed`);
        if (!(refusal instanceof ImportRefusedError)) throw new Error(`${what}: not refused (${String(refusal)})`);
        if (refusal.line !== index + 2)
          throw new Error(`${what}: refused at ${refusal.line}, not ${index + 2}: ${refusal.message}`);
        return true;
      }),
      60,
    );

    // The reproduction, through the command-line tool: a lead.updated at revision 0 of `xxxxx<B's lead id>`
    // and a webhook_endpoint.paused naming B's endpoint, appended to A's export and re-chained.
    const file = path.join(tempDir(t), 'crafted.ndjson');
    const repro = [
      template(`xxxxx${bLeadId}`, 'lead.updated', hijacked(bLeadId)),
      template(`webhook-endpoint-${bEndpointId}`, 'webhook_endpoint.paused', {
        endpoint_id: bEndpointId,
        reason: 'hijacked',
        consecutive_failures: 50,
      }),
    ].map((e) => ({ ...e, tenant: A }));
    fs.writeFileSync(file, `${rechain(aLines[0]!, [...aEvents, ...repro]).join('\n')}\n`);
    const cli = await runCli(target.url, ['import', file]);
    t.not(cli.code, 0, 'the CLI refuses it');
    t.match(cli.stderr, new RegExp(`line ${aEvents.length + 2}: event ${repro[0]!.id}: the stream name "xxxxx`));
    t.equal(await workspaceDigest(target.pool, B), before, "B's rows are unchanged");

    // The control: A's export as written imports beside B, and B is still as it was.
    await importInto(aLines);
    t.equal(await workspaceDigest(target.pool, B), before, "B's rows are unchanged by A's import");
  },
);
