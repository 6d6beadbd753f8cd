import type { PayloadVersion } from './names.js';

export interface VersionEntry {
  version: PayloadVersion;
  /** One line: what a receiver on the version before sees change. */
  summary: string;
  /** The changes, each a sentence. */
  changes: string[];
}

/** The payload versions and what each changed, newest first: the service's changelog page renders this. */
export const CHANGELOG: readonly VersionEntry[] = [
  {
    version: '2026-11-29',
    summary:
      "Each payload says its version and the resource's own version, so a stale update is dropped in one comparison.",
    changes: [
      "The envelope gains `payload_version` (this version's name) after `created_at`.",
      'The envelope gains `resource`: `{type, id, version}`, the resource the event changed (a lead, application, document, invoice, task or webhook endpoint; payments and refunds belong to their invoice) and its version after the event. Versions grow with every change of that resource, including changes no webhook is sent for, so they may skip numbers; keep the highest version applied per resource id and drop a payload whose version is not higher.',
      '`data` is unchanged.',
    ],
  },
  {
    version: '2026-11-22',
    summary: 'The first shape: `id`, `event`, `tenant_id`, `created_at` and `data`, nothing else.',
    changes: [
      'The envelope as the interface specification describes it (WebhookEvent), with no additional properties.',
      'Endpoints and workspaces stored before payload versions existed are on this version until their owner changes it.',
    ],
  },
];
