/*
 * Which values of an event are personal data, and what each reads as once its person is erased (crypto-shredding;
 * docs/architecture.md, "Personal data and erasure"; the list and its reasons are in docs/decisions.md, "Erasure").
 * Pure: no I/O and no keys, so the choice of fields is tested on its own.
 *
 * A field is named by a path of object keys; `*` stands for every element of an array. The identifying and free-text
 * fields of the spec's Lead (name, phones, email, city, state, date of birth, landing page, UTM and campaign, custom
 * fields) and the person's own words (message, notes) are personal; the fields a workflow needs (ids, stage, source,
 * branch, owner, visa type, country, intake, scores, times) stay in the clear.
 */

import { PERSONAL_LEAD_FIELDS } from '../domain/leads/erase.js';
import type { DomainEventType } from './domain-events.js';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** One personal field: where it is and what it reads as after erasure (the public shape keeps its type). */
export interface PersonalField {
  path: readonly string[];
  erased: JsonValue;
}

const field = (path: string, erased: JsonValue): PersonalField => ({ path: path.split('.'), erased });

/** The personal fields of a Lead object (the public shape) under `prefix`: the domain's list. */
function leadFields(prefix: string): PersonalField[] {
  return PERSONAL_LEAD_FIELDS.map((f) => field(`${prefix}.${f.name}`, f.erased));
}

const LEAD_PAYLOAD = leadFields('payload');

const NONE: readonly PersonalField[] = [];

/**
 * Personal fields per event type: every type the service appends is listed (the compiler refuses one left out), NONE
 * saying it holds none. Only fields present in an event are sealed.
 */
export const PERSONAL_FIELDS: { readonly [T in DomainEventType]: readonly PersonalField[] } = {
  'lead.created': [...LEAD_PAYLOAD, field('message', null)],
  'lead.updated': LEAD_PAYLOAD,
  'lead.assigned': LEAD_PAYLOAD,
  'lead.lost': LEAD_PAYLOAD,
  'lead.converted': LEAD_PAYLOAD,
  'lead.enquiry_received': [...leadFields('submission'), field('message', null)],
  'lead.note_added': [field('note', '')],
  'application.note_added': [field('note', '')],
  // Module details are free-form case notes (passport numbers, addresses); module names are the workspace's labels.
  'application.opened': [field('modules.*.details', {})],
  'application.module_updated': [field('module.details', {})],
  'application.module_details_saved': [field('details', {})],
  'application.stage_changed': NONE,
  'application.status_changed': NONE,
  'application.outcome': NONE,
  // A document's file name ("Passport – Priya Sharma.pdf") and a rejection's reason name the person; the file's bytes
  // are not in the log (erasure deletes the file itself). Type, size, content type and checksum stay in the clear.
  'document.received': [field('filename', '')],
  'document.uploaded': [field('payload.filename', '')],
  'document.rejected': [field('reason', ''), field('payload.filename', ''), field('payload.rejection_reason', '')],
  // The scanner's words (a signature, an error), not the person's.
  'document.infected': NONE,
  'document.scan_failed': NONE,
  // What staff write about the person: a task's title ("Call Priya about her visa"), an invoice's line descriptions,
  // a payment's reference and a refund's reason. Amounts, currencies, dates and statuses stay in the clear.
  'task.created': [field('title', '')],
  'task.changed': [field('title', '')],
  'task.overdue': [field('payload.title', '')],
  'task.completed': NONE,
  'task.reopened': NONE,
  'invoice.issued': [field('payload.line_items.*.description', '')],
  'payment.received': [field('payload.reference', null)],
  'refund.created': [field('refund.reason', null)],
  'refund.paid': [field('payload.reason', null)],
  // A webhook endpoint is the workspace's own configuration: no person's data.
  'webhook_endpoint.created': NONE,
  'webhook_endpoint.deleted': NONE,
  'webhook_endpoint.changed': NONE,
  'webhook_endpoint.paused': NONE,
  'webhook_endpoint.resumed': NONE,
  'webhook_endpoint.secret_rotated': NONE,
  'webhook_endpoint.version_changed': NONE,
  'webhook_endpoint.rate_limit_changed': NONE,
  'webhook.test': NONE,
  'list.exported': NONE,
};

/** The fields by type name, for events read as text (a type no version of the service appends holds none). */
const FIELDS_BY_TYPE: ReadonlyMap<string, readonly PersonalField[]> = new Map(Object.entries(PERSONAL_FIELDS));

/** The personal fields of an event type; none for a type the service does not append. */
export const personalFieldsOf = (type: string): readonly PersonalField[] => FIELDS_BY_TYPE.get(type) ?? NONE;

/** A concrete location in an event's data: object keys and array indices. */
export type Location = (string | number)[];

type Container = Record<string, unknown> | unknown[];

function isContainer(value: unknown): value is Container {
  return typeof value === 'object' && value !== null;
}

function child(container: Container, key: string | number): unknown {
  if (Array.isArray(container)) return typeof key === 'number' ? container[key] : undefined;
  return typeof key === 'string' && Object.hasOwn(container, key) ? container[key] : undefined;
}

/**
 * Calls `found` with every location in `data` a path names that holds a value, and the value (`*` expanded over
 * array elements). Walks with one mutable location and copies it only where something is found: every event
 * appended is walked once per personal field of its type, so the walk allocates as little as it can.
 */
function visit(
  data: unknown,
  path: readonly string[],
  depth: number,
  at: Location,
  found: (location: Location, value: unknown) => void,
): void {
  if (depth === path.length) {
    found([...at], data);
    return;
  }
  if (!isContainer(data)) return;
  const head = path[depth]!;
  if (head === '*') {
    if (!Array.isArray(data)) return;
    for (let i = 0; i < data.length; i++) {
      at.push(i);
      visit(data[i], path, depth + 1, at, found);
      at.pop();
    }
    return;
  }
  const next = child(data, head);
  if (next === undefined) return;
  at.push(head);
  visit(next, path, depth + 1, at, found);
  at.pop();
}

/** Every location in `data` a path names that holds a value (`*` expanded over array elements). */
export function locate(data: unknown, path: readonly string[]): Location[] {
  const locations: Location[] = [];
  visit(data, path, 0, [], (location) => locations.push(location));
  return locations;
}

/** Sets a member of a container that it already has. */
function setChild(parent: Container, key: string | number | undefined, value: unknown): void {
  if (Array.isArray(parent)) {
    if (typeof key === 'number' && key < parent.length) parent[key] = value;
  } else if (typeof key === 'string' && Object.hasOwn(parent, key)) parent[key] = value;
}

/** The personal values of an event: each present location with its value, and the erased value it leaves behind. */
export interface Extracted {
  /** The data with every personal value replaced by its erased value (a copy; `data` itself is never changed). */
  clear: Record<string, unknown>;
  /** The personal values taken out, by location (empty: the event holds no personal data). */
  values: [Location, unknown][];
}

/** Erased values are empty: a fresh one per location, so no two places share an object. */
const fresh = (erased: JsonValue): JsonValue =>
  typeof erased === 'object' && erased !== null ? (Array.isArray(erased) ? [] : {}) : erased;

/** True when `value` is the erased value itself: the same primitive, or an empty object or array like it. */
export function isErasedValue(value: unknown, erased: JsonValue): boolean {
  if (typeof erased !== 'object' || erased === null) return value === erased;
  if (typeof value !== 'object' || value === null || Array.isArray(value) !== Array.isArray(erased)) return false;
  return Object.keys(value).length === 0;
}

/**
 * Sets the value at an existing location of `root`, copying (shallowly, once each) the containers on the way, so the
 * data it was copied from is left as it was. Cheaper than a deep copy: only the payload object and the path to a
 * module's details are copied, never the rest of the event.
 */
function setCopied(root: Record<string, unknown>, location: Location, value: unknown, copied: Set<unknown>): void {
  let parent: Container = root;
  const last = location.length - 1;
  for (let i = 0; i < last; i++) {
    const key = location[i]!;
    const next = child(parent, key);
    if (!isContainer(next)) return;
    const own: Container = copied.has(next) ? next : Array.isArray(next) ? [...next] : { ...next };
    copied.add(own);
    setChild(parent, key, own);
    parent = own;
  }
  setChild(parent, location[last], value);
}

export function extractPersonal(type: string, data: Record<string, unknown>): Extracted {
  const fields = personalFieldsOf(type);
  const values: [Location, unknown][] = [];
  if (fields.length === 0) return { clear: data, values };
  const clear = { ...data };
  const copied = new Set<unknown>([clear]);
  for (const f of fields)
    visit(data, f.path, 0, [], (location, value) => {
      // A value that already is its erased value (an absent phone's null) says nothing: it stays where it is, in
      // the clear, and restores as itself. Most of a lead's personal fields are empty; sealing them made the event
      // longer by their locations for nothing.
      if (isErasedValue(value, f.erased)) return;
      values.push([location, value]);
      setCopied(clear, location, fresh(f.erased), copied);
    });
  return { clear: values.length === 0 ? data : clear, values };
}

/** Puts personal values back where `extractPersonal` took them from (into a copy of `clear`). */
export function restorePersonal(
  clear: Record<string, unknown>,
  values: readonly [Location, unknown][],
): Record<string, unknown> {
  const data = { ...clear };
  const copied = new Set<unknown>([data]);
  for (const [location, value] of values) setCopied(data, location, value, copied);
  return data;
}

/** True when some personal field of the event holds a value that `matches`. */
function somePersonalValue(
  type: string,
  data: Record<string, unknown>,
  matches: (value: unknown, field: PersonalField) => boolean,
): boolean {
  let found = false;
  for (const f of personalFieldsOf(type)) {
    visit(data, f.path, 0, [], (_location, value) => {
      found ||= matches(value, f);
    });
    if (found) return true;
  }
  return false;
}

/** True when an event of this type holds at least one personal field (whatever its value). */
export function holdsPersonalData(type: string, data: Record<string, unknown>): boolean {
  return somePersonalValue(type, data, () => true);
}

/** True when some personal value of the event is not its erased value (something personal would be stored). */
export function saysPersonalData(type: string, data: Record<string, unknown>): boolean {
  return somePersonalValue(type, data, (value, f) => !isErasedValue(value, f.erased));
}
