import type { Plan, Scope } from '../shared/enums.js';
import type { BucketSpec, Workspace } from './workspace.js';

export type Feature = 'webhooks';

interface PlanSpec {
  features: readonly Feature[];
  /** New live leads a workspace may create per calendar month (UTC); null is unlimited. */
  monthlyLeads: number | null;
  webhookEndpoints: number;
  rate: { key: BucketSpec; scopes: Record<Scope, BucketSpec>; widget: BucketSpec };
}

/** Defaults per plan; a workspace definition's `limits` overrides them. The numbers are explained in docs/decisions.md. */
export const PLAN_SPECS: Record<Plan, PlanSpec> = {
  starter: {
    features: [],
    monthlyLeads: 1_000,
    webhookEndpoints: 0,
    rate: {
      key: { capacity: 60, refill_per_second: 10 },
      scopes: {
        'leads:create': { capacity: 20, refill_per_second: 2 },
        'leads:read': { capacity: 60, refill_per_second: 10 },
        'leads:update': { capacity: 30, refill_per_second: 5 },
        'applications:read': { capacity: 60, refill_per_second: 10 },
        'webhooks:manage': { capacity: 10, refill_per_second: 1 },
        'events:read': { capacity: 60, refill_per_second: 10 },
      },
      widget: { capacity: 120, refill_per_second: 20 },
    },
  },
  growth: {
    features: ['webhooks'],
    monthlyLeads: 20_000,
    webhookEndpoints: 10,
    rate: {
      key: { capacity: 200, refill_per_second: 50 },
      scopes: {
        'leads:create': { capacity: 100, refill_per_second: 20 },
        'leads:read': { capacity: 200, refill_per_second: 50 },
        'leads:update': { capacity: 100, refill_per_second: 20 },
        'applications:read': { capacity: 200, refill_per_second: 50 },
        'webhooks:manage': { capacity: 20, refill_per_second: 2 },
        'events:read': { capacity: 200, refill_per_second: 50 },
      },
      widget: { capacity: 400, refill_per_second: 100 },
    },
  },
  enterprise: {
    features: ['webhooks'],
    monthlyLeads: null,
    webhookEndpoints: 50,
    rate: {
      key: { capacity: 1000, refill_per_second: 250 },
      scopes: {
        'leads:create': { capacity: 500, refill_per_second: 100 },
        'leads:read': { capacity: 1000, refill_per_second: 250 },
        'leads:update': { capacity: 500, refill_per_second: 100 },
        'applications:read': { capacity: 1000, refill_per_second: 250 },
        'webhooks:manage': { capacity: 50, refill_per_second: 5 },
        'events:read': { capacity: 1000, refill_per_second: 250 },
      },
      widget: { capacity: 2000, refill_per_second: 500 },
    },
  },
};

export function hasFeature(workspace: Pick<Workspace, 'plan'>, feature: Feature): boolean {
  return PLAN_SPECS[workspace.plan].features.includes(feature);
}

export function monthlyLeadQuota(workspace: Pick<Workspace, 'plan' | 'settings'>): number | null {
  const override = workspace.settings.limits.monthly_leads;
  return override !== undefined ? override : PLAN_SPECS[workspace.plan].monthlyLeads;
}

export function webhookEndpointLimit(workspace: Pick<Workspace, 'plan' | 'settings'>): number {
  return workspace.settings.limits.webhook_endpoints ?? PLAN_SPECS[workspace.plan].webhookEndpoints;
}

/**
 * Page views of the embeddable form fetch its configuration with the public key; they have a bucket of their own,
 * apart from the key's other buckets, so a busy website cannot use up the tokens its lead submissions need.
 */
export function widgetBucket(workspace: Pick<Workspace, 'plan' | 'settings'>): BucketSpec {
  return workspace.settings.limits.rate?.widget ?? PLAN_SPECS[workspace.plan].rate.widget;
}

export function rateBuckets(
  workspace: Pick<Workspace, 'plan' | 'settings'>,
  scope: Scope | undefined,
): { key: BucketSpec; scope?: BucketSpec } {
  const defaults = PLAN_SPECS[workspace.plan].rate;
  const override = workspace.settings.limits.rate;
  const key = override?.key ?? defaults.key;
  if (!scope) return { key };
  return { key, scope: override?.scopes?.[scope] ?? defaults.scopes[scope] };
}
