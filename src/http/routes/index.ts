import type { AppServices, TypedApp } from '../services.js';
import { registerCors } from '../cors.js';
import { registerWidgetAssetRoutes } from '../../widget/routes.js';
import { registerAdminApplicationRoutes } from './admin-applications.js';
import { registerApplicationRoutes } from './applications.js';
import { registerLeadRoutes } from './leads.js';
import { registerMetaRoutes } from './meta.js';
import { registerWidgetRoutes } from './widget.js';
import { registerWebhookRoutes } from './webhooks.js';
import { registerAdminWebhookRoutes } from './admin-webhooks.js';

/** Every /v1 route module, registered in one place. */
export async function registerRoutes(app: TypedApp, services: AppServices): Promise<void> {
  registerCors(app, services);
  registerWidgetRoutes(app, services);
  registerLeadRoutes(app, services);
  registerMetaRoutes(app, services);
  registerApplicationRoutes(app, services);
  registerAdminApplicationRoutes(app, services);
  registerWebhookRoutes(app, services);
  registerAdminWebhookRoutes(app, services);
  registerWidgetAssetRoutes(app, services);
  void app;
  void services;
}
