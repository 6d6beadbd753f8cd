import { systemResolver, type Resolver } from './address-guard.js';

/**
 * What the webhook code needs beyond the database: the DNS resolver and the trusted certificate authorities. Part of
 * the service container (`AppServices.webhooks`, src/bootstrap.ts); the defaults are the system's. Tests set their
 * own (a resolver answering test names, their test CA) for one services object, which the routes and the workers
 * then use.
 */
export interface WebhookRuntime {
  resolve: Resolver;
  /** Certificate authorities trusted for deliveries instead of the system's (tests only). */
  ca?: string | Buffer | (string | Buffer)[];
}

export const systemWebhookRuntime = (): WebhookRuntime => ({ resolve: systemResolver });

/** Replaces parts of a services object's webhook runtime; call it before the workers start. */
export function configureWebhookRuntime(
  services: { webhooks: WebhookRuntime },
  runtime: Partial<WebhookRuntime>,
): void {
  services.webhooks = { ...services.webhooks, ...runtime };
}
