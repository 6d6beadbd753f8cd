import { Type } from 'typebox';

/** Enumerations named by the specification, each written once. */
export const VISA_TYPES = ['student', 'work', 'pr', 'visitor', 'spouse_dependent', 'business'] as const;
export const QUALIFICATIONS = [
  'secondary',
  'higher_secondary',
  'diploma',
  'bachelors',
  'masters',
  'doctorate',
  'other',
] as const;
export const TEMPERATURES = ['hot', 'warm', 'cold'] as const;
export const ENGLISH_TESTS = ['IELTS', 'PTE', 'TOEFL', 'DUOLINGO'] as const;
export const FIELD_TYPES = ['text', 'number', 'date', 'dropdown', 'checkbox'] as const;
/** The spec's five scopes, and `events:read` for the Events API (GET /v1/events, an endpoint's deliveries by number). */
export const SCOPES = [
  'leads:create',
  'leads:read',
  'leads:update',
  'applications:read',
  'webhooks:manage',
  'events:read',
] as const;
export const PLANS = ['starter', 'growth', 'enterprise'] as const;
export const EVENT_KINDS = [
  'lead.created',
  'lead.updated',
  'lead.assigned',
  'lead.converted',
  'lead.lost',
  'application.stage_changed',
  'application.module_updated',
  'application.outcome',
  'document.uploaded',
  'document.rejected',
  'invoice.issued',
  'payment.received',
  'refund.paid',
  'task.overdue',
  'webhook.test',
] as const;

export type VisaType = (typeof VISA_TYPES)[number];
export type Scope = (typeof SCOPES)[number];
export type Plan = (typeof PLANS)[number];
export type EventKind = (typeof EVENT_KINDS)[number];

/** A TypeBox enum of string literals (rendered as `enum` in the OpenAPI document). */
export function StringEnum<const T extends readonly string[]>(values: T, options: Record<string, unknown> = {}) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}
