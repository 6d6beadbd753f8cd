import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type RouteOptions } from 'fastify';
import t from 'tap';
import { registerConsole } from '../../src/console/plugin.js';
import { SchemaCompilations } from '../../src/http/schema-compilation.js';
import { accessOf, REQUIRE_DECLARED_ACCESS, requireDeclaredAccess } from '../../src/console/routes.js';
import { startApp } from '../support/app.js';

t.test('a console route without a declared access fails start-up, naming it', async (t) => {
  const app = Fastify();
  // Not awaited: the registration's failure is the start-up's (ready), as the service's own start would see it.
  void app.register(async (scope) => {
    requireDeclaredAccess(scope);
    scope.get('/declared', { config: { console: 'open' } }, async () => 'ok');
    scope.get('/w/:slug/forgotten', async () => 'no access said');
  });
  await t.rejects(async () => {
    await app.ready();
  }, /GET \/w\/:slug\/forgotten declares no config\.console access/);
  await app.close();

  const fine = Fastify();
  void fine.register(async (scope) => {
    requireDeclaredAccess(scope);
    scope.get('/w/:slug/leads', { config: { console: { operation: 'leads.view' } } }, async () => 'ok');
    scope.get('/account', { config: { console: 'account' } }, async () => 'ok');
  });
  await t.resolves(async () => {
    await fine.ready();
  }, 'every route declared: it starts');
  await fine.close();
});

/** What a console route leaves undeclared: its access, or the schema of a part it reads. */
function undeclared(route: RouteOptions): string[] {
  const missing: string[] = [];
  try {
    accessOf(route);
  } catch {
    missing.push('config.console');
  }
  const schema = route.schema ?? {};
  if (route.url.includes(':') && !schema.params) missing.push('schema.params');
  if ([route.method].flat().includes('POST') && !schema.body) missing.push('schema.body');
  return missing;
}

t.test('every console route of the app names its access and the schemas of its path and form', async (t) => {
  const { services } = await startApp(t);
  const app = Fastify().withTypeProvider<TypeBoxTypeProvider>();
  // What the service's app gives the console besides its routes: the schemas compiled on first use.
  app.decorate('schemaCompilations', new SchemaCompilations());
  const routes: RouteOptions[] = [];
  app.addHook('onRoute', (route) => {
    if (route.method !== 'HEAD') routes.push(route);
  });
  await registerConsole(app, services, { requireDeclaredAccess: false });
  await app.ready();
  await app.close();
  t.ok(routes.length > 40, `the console's ${routes.length} routes were seen`);
  const missing = routes
    .map((route) => ({ route: `${[route.method].flat().join(',')} ${route.url}`, missing: undeclared(route) }))
    .filter((r) => r.missing.length > 0);
  for (const r of missing) t.comment(`${r.route}: no ${r.missing.join(', ')}`);
  t.same(
    missing.map((r) => r.route),
    [],
    `${missing.length} console route(s) leave something undeclared (listed above)`,
    // The console refuses to start with an undeclared route once REQUIRE_DECLARED_ACCESS is on
    // (src/console/routes.ts); until then, this lists the routes that still declare nothing.
    { todo: REQUIRE_DECLARED_ACCESS ? false : 'REQUIRE_DECLARED_ACCESS is off until every page is converted' },
  );
});
