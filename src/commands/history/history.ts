import type { AppServices } from '../../bootstrap.js';
import { fold } from '../../domain/applications/index.js';
import { evolve } from '../../domain/leads/evolve.js';
import { toLeadEvent } from '../../domain/leads/events.js';
import { leadStream, type Lead } from '../../domain/leads/lead.js';
import type { StoredEvent } from '../../events/types.js';
import { toApplicationEvent } from '../../projections/applications.js';
import { applicationView } from '../applications/application-view.js';
import { applicationStream } from '../applications/load-application.js';
import { RuleError } from '../../domain/rule-error.js';
import { NotFoundError } from '../errors.js';
import { actorText, eventSummary } from './summary.js';

/** The records whose history auditors read: the two aggregates a person's case lives in. */
export type HistorySubject = 'lead' | 'application';

const streamOf = (subject: HistorySubject, id: string): string =>
  subject === 'lead' ? leadStream(id) : applicationStream(id);

/** The record's stream, or not found when it is unknown, another workspace's or the other mode's. */
async function readSubject(
  services: Pick<AppServices, 'store'>,
  scope: { tenantId: string; sandbox: boolean },
  subject: HistorySubject,
  id: string,
): Promise<StoredEvent[]> {
  const events = await services.store.readStream(streamOf(subject, id));
  const first = events[0];
  if (!first || first.tenantId !== scope.tenantId || first.sandbox !== scope.sandbox) throw new NotFoundError(subject);
  return events;
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
  services: Pick<AppServices, 'store'>,
  scope: { tenantId: string; sandbox: boolean },
  subject: HistorySubject,
  id: string,
  page: { limit: number; startingAfter?: string },
): Promise<HistoryPage> {
  const events = await readSubject(services, scope, subject, id);
  let from = 0;
  if (page.startingAfter !== undefined) {
    const index = events.findIndex((e) => e.id === page.startingAfter);
    if (index < 0)
      throw new RuleError('invalid', 'validation_failed', `starting_after is not an event of this ${subject}`, {
        starting_after: `not an event of this ${subject}`,
      });
    from = index + 1;
  }
  const slice = events.slice(from, from + page.limit);
  return {
    object: 'list',
    data: slice.map((e) => ({
      id: e.id,
      type: e.type,
      at: e.createdAt.toISOString(),
      revision: e.revision,
      actor: (e.metadata.actor as Record<string, unknown> | undefined) ?? null,
      actor_text: actorText(e.metadata.actor),
      summary: eventSummary(e),
      facts: e.data,
    })),
    has_more: from + page.limit < events.length,
  };
}

/** The record's events created at or before `asOf`; an instant in the future is refused (later events may come). */
async function eventsAsOf(
  services: Pick<AppServices, 'store' | 'now'>,
  scope: { tenantId: string; sandbox: boolean },
  subject: HistorySubject,
  id: string,
  asOf: Date,
): Promise<StoredEvent[]> {
  if (asOf.getTime() > services.now().getTime())
    throw new RuleError('invalid', 'validation_failed', 'as_of is in the future', {
      as_of: 'must not be in the future: later events may still come',
    });
  const events = (await readSubject(services, scope, subject, id)).filter(
    (e) => e.createdAt.getTime() <= asOf.getTime(),
  );
  // Before its first event the record did not exist: not found, as an id that never existed.
  if (events.length === 0) throw new NotFoundError(subject);
  return events;
}

/** A lead as it was at `asOf`: its events up to then, folded by the evolve function the projection runs. */
export async function readLeadAsOf(
  services: Pick<AppServices, 'store' | 'now'>,
  scope: { tenantId: string; sandbox: boolean },
  id: string,
  asOf: Date,
): Promise<{ revision: number; lead: Lead }> {
  const events = await eventsAsOf(services, scope, 'lead', id, asOf);
  const lead = events.map(toLeadEvent).reduce<Lead | undefined>(evolve, undefined);
  if (!lead) throw new NotFoundError('lead');
  return { revision: events[events.length - 1]!.revision, lead };
}

/** An application as it was at `asOf`, folded and shown as the admin interface shows it now. */
export async function readApplicationAsOf(
  services: Pick<AppServices, 'store' | 'now'>,
  scope: { tenantId: string; sandbox: boolean },
  id: string,
  asOf: Date,
): Promise<{ revision: number; application: ReturnType<typeof applicationView> }> {
  const events = await eventsAsOf(services, scope, 'application', id, asOf);
  const state = fold(events.map(toApplicationEvent));
  if (!state) throw new NotFoundError('application');
  return { revision: events[events.length - 1]!.revision, application: applicationView(state, scope.sandbox) };
}
