/**
 * The CRUD twin of POST /v1/leads: the service an integrator would otherwise write, run by bench:leads beside the
 * service as its like-for-like baseline (docs/benchmarks.md, "bench:leads").
 *
 * A plain fastify app that authenticates the key against an in-memory map, validates the body with the service's own
 * LeadCreate schema, normalises it and decides the new lead with the service's own domain rules (so both write the
 * same row), then in one transaction inserts that row into `twin_leads` (the `leads` read model's columns and indexes)
 * and one webhook row into `twin_outbox`. No event log, no sealing, no locks, no duplicate lookup, no idempotency, no
 * rate limits: a duplicate person is left to the unique indexes (409).
 */
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type pg from 'pg';
import { leadSource } from '../src/commands/leads/capture-lead.js';
import { decideCapture } from '../src/domain/leads/decide.js';
import { LeadEventType, type Lead, type Named } from '../src/domain/leads/lead.js';
import { normaliseSubmission, type LeadCreateBody } from '../src/domain/leads/submission.js';
import { hashKey } from '../src/keys/api-key.js';
import { LeadCreate } from '../src/schemas/lead.js';
import { newId } from '../src/shared/ids.js';
import { CURRENT_PAYLOAD_VERSION, renderEnvelope } from '../src/webhooks/versions/index.js';
import type { Workspace } from '../src/workspaces/workspace.js';

/**
 * `LIKE … INCLUDING ALL` copies every index of `leads` whatever its method, expression or predicate: the primary key,
 * the unique phone and email ones, the sync, filter and partial ones and the GIN trigram index (sameIndexes checks it
 * on every run). It copies no foreign key, and the twin needs none: `leads` has none (a read model, its tenant checked
 * by the writer). The outbox holds what a relay would send: the lead.created body the service's deliveries carry.
 */
export async function createTwinTables(sql: pg.Pool): Promise<void> {
  await sql.query(`
    CREATE TABLE twin_leads (LIKE leads INCLUDING ALL);
    CREATE TABLE twin_outbox (
      id          uuid PRIMARY KEY,
      tenant_id   uuid NOT NULL,
      event_type  text NOT NULL,
      payload     jsonb NOT NULL,
      created_at  timestamptz NOT NULL DEFAULT now()
    );`);
  await sameIndexes(sql);
}

/** Refuses to run when `twin_leads` lacks an index of `leads` (compared by method, columns, uniqueness and predicate). */
async function sameIndexes(sql: pg.Pool): Promise<void> {
  const { rows } = await sql.query<{ table: string; shapes: string[] }>(
    `SELECT tablename AS table,
            array_agg((indexdef LIKE 'CREATE UNIQUE%')::text || ' ' || substring(indexdef FROM ' USING (.*)$')) AS shapes
       FROM pg_indexes WHERE schemaname = current_schema() AND tablename IN ('leads', 'twin_leads')
      GROUP BY tablename`,
  );
  const shapes = (table: string) => [...(rows.find((r) => r.table === table)?.shapes ?? [])].sort().join('\n');
  if (shapes('leads') !== shapes('twin_leads'))
    throw new Error(`twin_leads' indexes differ from leads':\n${shapes('leads')}\n---\n${shapes('twin_leads')}`);
}

/** Copies the seeded leads, so both tables' indexes start the same size when the twin's steps begin. */
export async function copySeededLeads(sql: pg.Pool): Promise<void> {
  await sql.query('INSERT INTO twin_leads SELECT * FROM leads');
}

export interface CrudTwin {
  port: number;
  close(): Promise<void>;
}

/** The twin listening on 127.0.0.1 (a free port), accepting the given live secret keys of their workspaces. */
export async function startCrudTwin(
  pool: pg.Pool,
  keys: readonly { value: string; workspace: Workspace }[],
): Promise<CrudTwin> {
  // By the key's SHA-256, as the service stores keys: the twin never keeps a key's value.
  const workspaces = new Map(keys.map(({ value, workspace }) => [hashKey(value).toString('base64'), workspace]));
  // fastify's own validator (its ajv compiler and formats) with the service's ajv options, so both refuse the same
  // bodies: no coercion, unknown properties refused rather than dropped, every problem reported, type lists allowed.
  // The service adds its edge checks (NUL bytes, lone surrogates) on top; a plain app has none.
  const app = Fastify({
    logger: false,
    bodyLimit: 65536,
    ajv: {
      customOptions: {
        allErrors: true,
        removeAdditional: false,
        useDefaults: false,
        strict: false,
        coerceTypes: false,
      },
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.decorateRequest('workspace', null);

  app.post(
    '/v1/leads',
    {
      schema: { body: LeadCreate },
      onRequest: async (request, reply) => {
        const workspace = workspaceOfBearer(workspaces, request.headers.authorization);
        if (!workspace) return reply.status(401).send({ error: 'unauthorized' });
        request.setDecorator('workspace', workspace);
      },
    },
    async (request, reply) => {
      const workspace = request.getDecorator<Workspace>('workspace');
      const lead = newLead(workspace, request.body, new Date());
      if ('problems' in lead) return reply.status(400).send({ error: 'validation_failed', fields: lead.problems });
      const leadJson = JSON.stringify(lead);
      try {
        await insertLeadAndOutbox(pool, workspace.id, lead, leadJson);
      } catch (error) {
        // The unique phone and email indexes are the twin's only duplicate check.
        if ((error as { code?: string }).code === '23505') return reply.status(409).send({ error: 'duplicate' });
        throw error;
      }
      return reply.status(201).type('application/json').send(leadJson);
    },
  );
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { port: (app.server.address() as AddressInfo).port, close: () => app.close() };
}

/** The workspace of an `Authorization: Bearer <key>` header, or undefined. */
function workspaceOfBearer(workspaces: Map<string, Workspace>, header: string | undefined): Workspace | undefined {
  if (!header?.startsWith('Bearer ')) return undefined;
  return workspaces.get(hashKey(header.slice('Bearer '.length)).toString('base64'));
}

/**
 * The lead the service would create for this body from a live secret key: the same normalisation (E.164 phones,
 * lower-cased email, checked dates and custom fields) and the same decision (branch, owner, stage, score), so the
 * twin's row is the service's row and the comparison measures only how each writes it. Or the body's problems.
 */
function newLead(workspace: Workspace, body: LeadCreateBody, now: Date): Lead | { problems: Record<string, string> } {
  const problems: Record<string, string> = {};
  const submission = normaliseSubmission(body, workspace.settings, now, problems);
  if (!body.consent) problems.consent = 'must be true';
  if (Object.keys(problems).length > 0) return { problems };
  const source: Named = leadSource(workspace, { kind: 'secret', source_key: null });
  const decision = decideCapture({
    // Time-ordered, as the service's ids: a random (v4) id would scatter the primary key's inserts over its pages.
    leadId: newId(),
    submission,
    existing: null,
    source,
    consentSource: source.key,
    settings: workspace.settings,
    now,
  });
  return decision.lead;
}

/**
 * One transaction, four statements as pg sends them: the lead's row with the columns filled as the leads projection
 * fills them for a new lead (src/projections/leads.ts, insertLead; revision 0, a new stream's first), and its outbox row.
 */
async function insertLeadAndOutbox(pool: pg.Pool, tenantId: string, lead: Lead, leadJson: string): Promise<void> {
  const outboxId = newId();
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(
      `INSERT INTO twin_leads (id, tenant_id, sandbox, revision, phone, email, branch_id, owner_id, converted, created_at, updated_at, body)
       VALUES ($1, $2, false, 0, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [
        lead.id,
        tenantId,
        lead.phone,
        lead.email,
        lead.branch.id,
        lead.owner?.id ?? null,
        lead.converted,
        lead.created_at,
        lead.updated_at,
        leadJson,
      ],
    );
    const webhookBody = renderEnvelope(
      {
        id: outboxId,
        type: LeadEventType.created,
        tenantId,
        createdAt: new Date(lead.created_at),
        data: { payload: lead },
        streamId: `lead-${lead.id}`,
        revision: 0,
      },
      CURRENT_PAYLOAD_VERSION,
    );
    await client.query(
      'INSERT INTO twin_outbox (id, tenant_id, event_type, payload, created_at) VALUES ($1, $2, $3, $4, $5)',
      [outboxId, tenantId, LeadEventType.created, webhookBody, lead.created_at],
    );
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
