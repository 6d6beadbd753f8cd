import type { EventKind } from '../shared/enums.js';
import type { ApplicationEvent } from '../domain/applications/types.js';
import type { DocumentEvent } from '../domain/documents/types.js';
import type { InvoiceEvent } from '../domain/invoices/types.js';
import type { LeadEvent } from '../domain/leads/events.js';
import type { TaskEvent } from '../domain/tasks/types.js';
import type { EndpointEvent } from '../domain/webhooks/endpoint.js';
import type { ListExportEvent } from '../domain/exports/list-export.js';

/** Every event the service appends: the union of the aggregates' events. Tables keyed by event type use its types. */
export type DomainEvent =
  LeadEvent | ApplicationEvent | TaskEvent | InvoiceEvent | DocumentEvent | EndpointEvent | ListExportEvent;
export type DomainEventType = DomainEvent['type'];

/*
 * The webhook kinds (the spec's list, src/shared/enums.ts) are exactly the events that carry a `payload`
 * (docs/architecture.md, "Event data convention"): an event given a payload and not the list, or a kind of the list
 * no event carries, fails to compile here.
 */
type Delivered = Extract<DomainEvent, { data: { payload: unknown } }>['type'];
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Holds<T extends true> = T;
export type WebhookKindsAreTheDeliveredEvents = Holds<Same<EventKind, Delivered>>;
