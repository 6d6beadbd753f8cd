import type { AppServices } from '../../bootstrap.js';
import type { TypedApp } from '../typed-app.js';
import { registerCors } from '../cors.js';
import { registerWidgetAssetRoutes } from '../../widget/routes.js';
import { registerAdminInterface } from './admin.js';
import { registerConsole } from '../../console/plugin.js';
import { registerApplicationRoutes } from './applications.js';
import { registerEventRoutes } from './events.js';
import { registerLeadRoutes } from './leads.js';
import { registerMetaRoutes } from './meta.js';
import { registerPayloadVersionRoutes } from './payload-versions.js';
import { registerWidgetRoutes } from './widget.js';
import { registerWebhookRoutes } from './webhooks.js';

/** Every route module, registered in one place; the admin interface is one plugin of its own (off without ADMIN_TOKEN). */
export async function registerRoutes(app: TypedApp, services: AppServices): Promise<void> {
  registerCors(app, services);
  registerWidgetRoutes(app, services);
  registerLeadRoutes(app, services);
  registerMetaRoutes(app, services);
  registerApplicationRoutes(app, services);
  registerWebhookRoutes(app, services);
  registerEventRoutes(app, services);
  registerPayloadVersionRoutes(app);
  registerWidgetAssetRoutes(app, services);
  await registerAdminInterface(app, services);
  await registerConsole(app, services);
  void app;
  void services;
}
