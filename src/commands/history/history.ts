import type { AppServices } from '../../bootstrap.js';
import { fold as foldApplication } from '../../domain/applications/index.js';
import { fold as foldLead } from '../../domain/leads/evolve.js';
import { toLeadEvent } from '../../domain/leads/events.js';
import { leadStream, type Lead } from '../../domain/leads/lead.js';
import type { StoredEvent } from '../../events/types.js';
import { toApplicationEvent } from '../../domain/applications/index.js';
import { applicationView } from '../applications/application-view.js';
import { applicationStream } from '../../domain/applications/index.js';
import { Refusal } from '../../domain/refusal.js';
import { OPENED_COLUMNS, toOpenedEvent, WITH_KEYS, type KeyedEventRow } from '../../events/event-rows.js';
import { NotFoundError } from '../errors.js';
import { actorText, eventSummary, stageNamesOf } from './summary.js';

/** The records whose history auditors read: the two aggregates a person's case lives in. */
export type HistorySubject = 'lead' | 'application';

const streamOf = (subject: HistorySubject, id: string): string =>
  subject === 'lead' ? leadStream(id) : applicationStream(id);

type Scope = { tenantId: string; sandbox: boolean };
type Services = Pick<AppServices, 'pool' | 'personalData'>;

/** The record's stream, or not found when it is unknown, another workspace's or the other mode's. */
async function subjectStream(services: Services, scope: Scope, subject: HistorySubject, id: string): Promise<string> {
  const stream = streamOf(subject, id);
  const first = await services.pool.query<{ tenant_id: string; sandbox: boolean }>(
    'SELECT tenant_id, sandbox FROM events WHERE stream_id = $1 AND revision = 0',
    [stream],
  );
  const row = first.rows[0];
  if (!row || row.tenant_id !== scope.tenantId || row.sandbox !== scope.sandbox) throw new NotFoundError(subject);
  return stream;
}

/** Events of a stream, opened, after `revision`, in revision order: at most `limit`, and only up to `until` if given. */
async function readEvents(
  services: Services,
  stream: string,
  page: { afterRevision: number; limit: number | null; until?: Date },
): Promise<StoredEvent[]> {
  const result = await services.pool.query<KeyedEventRow>(
    `SELECT ${OPENED_COLUMNS} FROM ${WITH_KEYS}
      WHERE events.stream_id = $1 AND events.revision > $2 AND ($3::timestamptz IS NULL OR events.created_at <= $3)
      ORDER BY events.revision LIMIT $4`,
    [stream, page.afterRevision, page.until ?? null, page.limit],
  );
  return result.rows.map((row) => toOpenedEvent(row, services.personalData));
}

/** The revision of the event `id` of the stream; a value that is not one of its events is refused. */
async function revisionOf(services: Services, stream: string, subject: HistorySubject, id: string): Promise<number> {
  const found = await services.pool.query<{ revision: number }>(
    'SELECT revision FROM events WHERE stream_id = $1 AND id::text = $2',
    [stream, id],
  );
  const row = found.rows[0];
  if (!row)
    throw new Refusal('invalid', 'validation_failed', `starting_after is not an event of this ${subject}`, {
      starting_after: `not an event of this ${subject}`,
    });
  return row.revision;
}

export interface HistoryItem {
  id: string;
  type: string;
  at: string;
  revision: number;
  actor: Record<string, unknown> | null;
  actor_text: string;
  summary: string;
  facts: Record<string, unknown>;
}

export interface HistoryPage {
  object: 'list';
  data: HistoryItem[];
  has_more: boolean;
}

/**
 * One page of a record's history, oldest first. `startingAfter` is the id of the last event of the previous page
 * (Stripe's convention); an id that is not an event of this record is refused.
 */
export async function readHistoryPage(
  services: Services,
  scope: { tenantId: string; sandbox: boolean },
  subject: HistorySubject,
  id: string,
  page: { limit: number; startingAfter?: string },
): Promise<HistoryPage> {
  const stream = await subjectStream(services, scope, subject, id);
  const afterRevision =
    page.startingAfter === undefined ? -1 : await revisionOf(services, stream, subject, page.startingAfter);
  // One more than the page, to know whether another follows.
  const read = await readEvents(services, stream, { afterRevision, limit: page.limit + 1 });
  const slice = read.slice(0, page.limit);
  // A case's stage changes name its stages as its opening event (revision 0) lists them.
  const opening =
    subject === 'application'
      ? afterRevision === -1
        ? read[0]
        : (await readEvents(services, stream, { afterRevision: -1, limit: 1 }))[0]
      : undefined;
  const context = { stageNames: stageNamesOf(opening) };
  return {
    object: 'list',
    data: slice.map((e) => ({
      id: e.id,
      type: e.type,
      at: e.createdAt.toISOString(),
      revision: e.revision,
      actor: (e.metadata.actor as Record<string, unknown> | undefined) ?? null,
      actor_text: actorText(e.metadata.actor),
      summary: eventSummary(e, context),
      facts: e.data,
    })),
    has_more: read.length > page.limit,
  };
}

/** The record's events created at or before `asOf`; an instant in the future is refused (later events may come). */
async function eventsAsOf(
  services: Services & Pick<AppServices, 'now'>,
  scope: { tenantId: string; sandbox: boolean },
  subject: HistorySubject,
  id: string,
  asOf: Date,
): Promise<StoredEvent[]> {
  if (asOf.getTime() > services.now().getTime())
    throw new Refusal('invalid', 'validation_failed', 'as_of is in the future', {
      as_of: 'must not be in the future: later events may still come',
    });
  const stream = await subjectStream(services, scope, subject, id);
  const events = await readEvents(services, stream, { afterRevision: -1, limit: null, until: asOf });
  // Before its first event the record did not exist: not found, as an id that never existed.
  if (events.length === 0) throw new NotFoundError(subject);
  return events;
}

/** A lead as it was at `asOf`: its events up to then, folded by the evolve function the projection runs. */
export async function readLeadAsOf(
  services: Services & Pick<AppServices, 'now'>,
  scope: { tenantId: string; sandbox: boolean },
  id: string,
  asOf: Date,
): Promise<{ revision: number; lead: Lead }> {
  const events = await eventsAsOf(services, scope, 'lead', id, asOf);
  const lead = foldLead(events.map(toLeadEvent));
  if (!lead) throw new NotFoundError('lead');
  return { revision: events[events.length - 1]!.revision, lead };
}

/** An application as it was at `asOf`, folded and shown as the admin interface shows it now. */
export async function readApplicationAsOf(
  services: Services & Pick<AppServices, 'now'>,
  scope: { tenantId: string; sandbox: boolean },
  id: string,
  asOf: Date,
): Promise<{ revision: number; application: ReturnType<typeof applicationView> }> {
  const events = await eventsAsOf(services, scope, 'application', id, asOf);
  const state = foldApplication(events.map(toApplicationEvent));
  if (!state) throw new NotFoundError('application');
  return { revision: events[events.length - 1]!.revision, application: applicationView(state, scope.sandbox) };
}
