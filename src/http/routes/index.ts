import type { AppServices, TypedApp } from '../services.js';

/** Every /v1 route module, registered in one place. */
export async function registerRoutes(app: TypedApp, services: AppServices): Promise<void> {
  void app;
  void services;
}
