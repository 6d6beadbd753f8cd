import type { AppServices } from '../http/services.js';
import { systemResolver, type Resolver } from './address-guard.js';

/**
 * What the webhook code needs beyond AppServices: the DNS resolver and the trusted certificate authorities. The
 * defaults are the system's; tests set their own (a resolver answering test names, their test CA) for one services
 * object, which the routes and the workers then use.
 */
export interface WebhookRuntime {
  resolve: Resolver;
  /** Certificate authorities trusted for deliveries instead of the system's (tests only). */
  ca?: string | Buffer | (string | Buffer)[];
}

const runtimes = new WeakMap<AppServices, WebhookRuntime>();

export function configureWebhookRuntime(services: AppServices, runtime: Partial<WebhookRuntime>): void {
  runtimes.set(services, { ...webhookRuntime(services), ...runtime });
}

export function webhookRuntime(services: AppServices): WebhookRuntime {
  return runtimes.get(services) ?? { resolve: systemResolver };
}
