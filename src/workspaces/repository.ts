import { isDeepStrictEqual } from 'node:util';
import { CURRENT_PAYLOAD_VERSION, type PayloadVersion } from '../webhooks/versions/names.js';
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { credentialedEmails, endAccessOfChangedMembers, keepAnOwner, MemberRefusal } from '../identity/members.js';
import { announceAuthChange } from '../keys/key-cache.js';
import type { SecretBox } from '../shared/secret-box.js';
import { withTransaction, type Queryable } from '../storage/postgres.js';
import { DefinitionError, type WorkspaceDefinition } from './definition.js';
import { monthlyLeadQuota } from './plans.js';
import { recountLeadQuota } from './quota.js';
import type { Workspace, WorkspaceSettings } from './workspace.js';
import { DEFAULT_DOCUMENT_MAX_BYTES, DOCUMENT_CONTENT_TYPES } from '../domain/documents/index.js';

interface WorkspaceRow {
  id: string;
  slug: string;
  name: string;
  plan: Workspace['plan'];
  status: Workspace['status'];
  revision: number;
  settings: WorkspaceSettings;
}

function keepId<T extends { id: string }>(previous: T[] | undefined, match: (item: T) => boolean): string {
  return previous?.find(match)?.id ?? randomUUID();
}

/** Turns a validated definition into stored settings, keeping the ids of branches, users and stages that already exist. */
export function settingsFromDefinition(
  def: WorkspaceDefinition,
  previous: WorkspaceSettings | undefined,
  box: SecretBox,
): WorkspaceSettings {
  const branches = branchesOf(def, previous);
  return {
    default_phone_country: def.default_phone_country,
    // Absent from the file keeps the zone chosen in the console.
    ...timeZoneOf(def, previous),
    branches,
    users: usersOf(def, previous, branches),
    pipeline: { stages: def.pipeline.stages.map((s) => ({ key: s.key, name: s.name, lost: s.lost ?? false })) },
    lost_reasons: def.lost_reasons,
    sources: def.sources ?? [
      { key: 'api', name: 'API' },
      { key: 'web_form', name: 'Web form' },
    ],
    custom_fields: def.custom_fields,
    visa_types: def.visa_types,
    countries: def.countries,
    widget: widgetOf(def, previous, box),
    application_workflow: applicationWorkflowOf(def, previous),
    ...(def.document_types ? { document_types: documentTypeDefs(def.document_types) } : {}),
    ...passkeyRequirementOf(def, previous),
    ...payloadVersionOfDefinition(def, previous),
    limits: def.limits ?? {},
  };
}

/**
 * The file's `payload_version`; absent, what the workspace has: a new workspace starts on the newest version, one
 * stored before versions existed stays on the first (the setting absent) until someone chooses.
 */
function payloadVersionOfDefinition(
  def: WorkspaceDefinition,
  previous: WorkspaceSettings | undefined,
): Pick<WorkspaceSettings, 'payload_version'> {
  const version = def.payload_version ?? previous?.payload_version ?? (previous ? undefined : CURRENT_PAYLOAD_VERSION);
  return version ? { payload_version: version } : {};
}

/** The file's `passkeys_required`; absent, what the workspace has (a file never lowers it by leaving it out). */
function passkeyRequirementOf(
  def: WorkspaceDefinition,
  previous: WorkspaceSettings | undefined,
): Pick<WorkspaceSettings, 'passkeys_required'> {
  const requirement = def.passkeys_required ?? previous?.passkeys_required;
  return requirement ? { passkeys_required: requirement } : {};
}

function timeZoneOf(def: WorkspaceDefinition, previous: WorkspaceSettings | undefined): { time_zone?: string } {
  const zone = def.time_zone ?? previous?.time_zone;
  return zone ? { time_zone: zone } : {};
}

function branchesOf(def: WorkspaceDefinition, previous: WorkspaceSettings | undefined): WorkspaceSettings['branches'] {
  return def.branches.map((b) => ({
    id: keepId(previous?.branches, (p) => p.code === b.code),
    code: b.code,
    name: b.name,
  }));
}

function usersOf(
  def: WorkspaceDefinition,
  previous: WorkspaceSettings | undefined,
  branches: WorkspaceSettings['branches'],
): WorkspaceSettings['users'] {
  const branchId = (code: string) => branches.find((b) => b.code === code)!.id;
  return def.users.map((u) => {
    const before = previous?.users.find((p) => p.email.toLowerCase() === u.email.toLowerCase());
    return {
      id: before?.id ?? randomUUID(),
      name: u.name,
      email: u.email.toLowerCase(),
      role: u.role,
      branch_id: branchId(u.branch),
      active: u.active ?? true,
      // An invitee stays one until they accept: a file naming them gives no access of itself.
      ...(before?.pending ? { pending: before.pending } : {}),
    };
  });
}

function widgetOf(
  def: WorkspaceDefinition,
  previous: WorkspaceSettings | undefined,
  box: SecretBox,
): WorkspaceSettings['widget'] {
  return {
    brand_color: def.widget.brand_color,
    logo_url: def.widget.logo_url,
    consent_text: def.widget.consent_text,
    consent_text_version: def.widget.consent_text_version,
    captcha: {
      provider: def.widget.captcha.provider,
      site_key: def.widget.captcha.site_key,
      sealed_secret: sealedCaptchaSecret(def.widget.captcha.secret, previous, box),
    },
  };
}

/** The captcha secret sealed: absent keeps the stored one, null removes it. */
function sealedCaptchaSecret(
  secret: string | null | undefined,
  previous: WorkspaceSettings | undefined,
  box: SecretBox,
): string | null {
  const previousSealed = previous?.widget.captcha.sealed_secret ?? null;
  if (secret === undefined) return previousSealed;
  if (secret === null) return null;
  // The same secret keeps its sealed form, so applying an unchanged file changes nothing.
  return previousSealed !== null && sameSecret(box, previousSealed, secret)
    ? previousSealed
    : box.captchaSecrets.seal(secret);
}

function applicationWorkflowOf(
  def: WorkspaceDefinition,
  previous: WorkspaceSettings | undefined,
): WorkspaceSettings['application_workflow'] {
  return {
    stages: (def.application_workflow?.stages ?? []).map((s, position) => ({
      id: keepId(previous?.application_workflow.stages, (p) => p.key === s.key),
      key: s.key,
      name: s.name,
      position,
    })),
    modules: (def.application_workflow?.modules ?? []).map((m) => ({
      key: m.key,
      name: m.name,
      stages: m.stages,
      counts_toward_progress: m.counts_toward_progress ?? true,
      optional: m.optional ?? false,
    })),
  };
}

function documentTypeDefs(
  types: NonNullable<WorkspaceDefinition['document_types']>,
): NonNullable<WorkspaceSettings['document_types']> {
  return types.map((d) => ({
    key: d.key,
    name: d.name,
    max_size_bytes: d.max_size_bytes ?? DEFAULT_DOCUMENT_MAX_BYTES,
    content_types: d.content_types ?? [...DOCUMENT_CONTENT_TYPES],
  }));
}

function sameSecret(box: SecretBox, sealed: string, secret: string): boolean {
  try {
    return box.captchaSecrets.open(sealed) === secret;
  } catch {
    return false; // sealed under another key: seal the given secret anew
  }
}

const SELECT = 'SELECT id, slug, name, plan, status, revision, settings FROM workspaces';

/**
 * Creates the workspace named by the definition's slug, or updates it in place; a definition that changes nothing
 * leaves the workspace as it is (same revision, no auth-change announcement) and says so with `changed: false`.
 */
export async function applyDefinition(
  pool: pg.Pool,
  def: WorkspaceDefinition,
  box: SecretBox,
): Promise<{ workspace: Workspace; created: boolean; changed: boolean }> {
  const result = await withTransaction(pool, async (sql) => {
    const existing = (await sql.query<WorkspaceRow>(`${SELECT} WHERE slug = $1 FOR UPDATE`, [def.slug])).rows[0];
    const settings = settingsFromDefinition(def, existing?.settings, box);
    if (existing && isUnchanged(existing, def, settings))
      return { workspace: existing, created: false, changed: false };
    if (existing) {
      await keepAnOwnerWhoCame(sql, existing.settings.users, settings.users);
      const updated = await sql.query<WorkspaceRow>(
        `UPDATE workspaces SET name = $2, plan = $3, status = $4, settings = $5, revision = revision + 1, updated_at = now()
          WHERE id = $1 RETURNING id, slug, name, plan, status, revision, settings`,
        [existing.id, def.name, def.plan, def.status ?? existing.status, JSON.stringify(settings)],
      );
      const now = new Date();
      await endAccessOfChangedMembers(sql, existing.id, existing.settings.users, settings.users, now);
      const limit = monthlyLeadQuota(updated.rows[0]!);
      if (monthlyLeadQuota(existing) === null && limit !== null) await recountLeadQuota(sql, existing.id, limit, now);
      return { workspace: updated.rows[0]!, created: false, changed: true };
    }
    const created = await sql.query<WorkspaceRow>(
      `INSERT INTO workspaces (id, slug, name, plan, status, settings) VALUES ($1, $2, $3, $4, $5, $6)
       RETURNING id, slug, name, plan, status, revision, settings`,
      [randomUUID(), def.slug, def.name, def.plan, def.status ?? 'active', JSON.stringify(settings)],
    );
    return { workspace: created.rows[0]!, created: true, changed: true };
  });
  if (!result.created && result.changed) await announceAuthChange(pool);
  return result;
}

/** The console's rule at this door too: a file cannot leave the workspace without an owner who has come. */
async function keepAnOwnerWhoCame(
  sql: Queryable,
  before: WorkspaceSettings['users'],
  after: WorkspaceSettings['users'],
): Promise<void> {
  const credentialed = await credentialedEmails(
    sql,
    [...before, ...after].map((u) => u.email),
  );
  try {
    keepAnOwner(before, after, credentialed);
  } catch (error) {
    if (error instanceof MemberRefusal) throw new DefinitionError([`users: ${error.message}`]);
    throw error;
  }
}

/** Whether the stored workspace already is what the definition describes (settings compared as stored JSON). */
function isUnchanged(existing: WorkspaceRow, def: WorkspaceDefinition, settings: WorkspaceSettings): boolean {
  return (
    existing.name === def.name &&
    existing.plan === def.plan &&
    existing.status === (def.status ?? existing.status) &&
    isDeepStrictEqual(JSON.parse(JSON.stringify(settings)), existing.settings)
  );
}

/** Finds a workspace by id or slug. */
export async function findWorkspace(sql: Queryable, idOrSlug: string): Promise<Workspace | undefined> {
  // Only a canonical uuid is an id: a slug may also be 36 hex digits and dashes, which the uuid cast would refuse.
  const byId = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(idOrSlug);
  const result = await sql.query<WorkspaceRow>(`${SELECT} WHERE ${byId ? 'id = $1::uuid' : 'slug = $1'}`, [idOrSlug]);
  return result.rows[0];
}

/** The workspaces of these ids, by id, in one statement (ids that name none are left out). */
export async function findWorkspacesById(sql: Queryable, ids: readonly string[]): Promise<Map<string, Workspace>> {
  if (ids.length === 0) return new Map();
  const result = await sql.query<WorkspaceRow>(`${SELECT} WHERE id = ANY ($1::uuid[])`, [[...new Set(ids)]]);
  return new Map(result.rows.map((row) => [row.id, row]));
}

export async function listWorkspaces(sql: Queryable): Promise<Workspace[]> {
  return (await sql.query<WorkspaceRow>(`${SELECT} ORDER BY created_at`)).rows;
}

export async function setWorkspaceStatus(
  sql: Queryable,
  id: string,
  status: Workspace['status'],
): Promise<Workspace | undefined> {
  const result = await sql.query<WorkspaceRow>(
    `UPDATE workspaces SET status = $2, revision = revision + 1, updated_at = now() WHERE id = $1
     RETURNING id, slug, name, plan, status, revision, settings`,
    [id, status],
  );
  await announceAuthChange(sql);
  return result.rows[0];
}

/**
 * Parsed settings per workspace and revision. Authentication reads only the small columns of the workspace row
 * on each request and takes the settings from here unless the revision moved.
 */
export class WorkspaceCache {
  private readonly entries = new Map<string, Workspace>();

  private readonly sql: Queryable;
  constructor(sql: Queryable) {
    this.sql = sql;
  }

  async get(id: string, revision: number): Promise<Workspace | undefined> {
    const cached = this.entries.get(id);
    if (cached && cached.revision === revision) return cached;
    const fresh = await findWorkspace(this.sql, id);
    if (fresh) this.entries.set(id, fresh);
    return fresh;
  }
}

/** The Events API's default payload version, set from the console's settings page; the revision moves as for the zone. */
export async function setWorkspacePayloadVersion(
  sql: Queryable,
  id: string,
  version: PayloadVersion,
): Promise<Workspace | undefined> {
  const result = await sql.query<WorkspaceRow>(
    `UPDATE workspaces SET settings = jsonb_set(settings, '{payload_version}', to_jsonb($2::text)),
            revision = revision + 1, updated_at = now()
      WHERE id = $1 RETURNING id, slug, name, plan, status, revision, settings`,
    [id, version],
  );
  return result.rows[0];
}

/** The workspace's time zone, set from the console's settings page; the revision moves so cached settings are re-read. */
export async function setWorkspaceTimeZone(sql: Queryable, id: string, zone: string): Promise<Workspace | undefined> {
  const result = await sql.query<WorkspaceRow>(
    `UPDATE workspaces SET settings = jsonb_set(settings, '{time_zone}', to_jsonb($2::text)),
            revision = revision + 1, updated_at = now()
      WHERE id = $1 RETURNING id, slug, name, plan, status, revision, settings`,
    [id, zone],
  );
  return result.rows[0];
}
