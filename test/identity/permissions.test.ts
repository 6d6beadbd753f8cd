import { readFileSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import t from 'tap';
import type { Command } from 'commander';
import { buildProgram } from '../../src/cli/program.js';
import { cliOperation, staffActor } from '../../src/cli/staff.js';
import {
  can,
  OPERATIONS,
  operationOfAdminRoute,
  PERMISSIONS,
  permissionTableMarkdown,
  ROLES,
} from '../../src/identity/permissions.js';
import { seedWorkspace, startApp } from '../support/app.js';
import { operationsOf, servedDocument } from '../support/openapi.js';
import { everyRole, memberOf } from './support.js';

/** A Markdown table's rows as trimmed cells (prettier aligns the columns; the words are what must agree). */
function cells(markdown: string): string[][] {
  return markdown
    .trim()
    .split('\n')
    .filter((line) => line.startsWith('|') && !/^\|[\s-|]+\|$/.test(line))
    .map((line) =>
      line
        .slice(1, -1)
        .split('|')
        .map((c) => c.trim()),
    );
}

// WRITE_PERMISSION_TABLE=1 (npm run docs:permissions) writes the table into the doc instead of only comparing.
t.test('docs/decisions.md holds the permission table the code enforces', async (t) => {
  const marked = /(<!-- permission-table:start -->\n)[\s\S]*?(\n<!-- permission-table:end -->)/;
  if (process.env.WRITE_PERMISSION_TABLE === '1') {
    const text = readFileSync('docs/decisions.md', 'utf8');
    writeFileSync(
      'docs/decisions.md',
      text.replace(marked, (_m, start: string, end: string) => `${start}\n${permissionTableMarkdown()}${end}`),
    );
  }
  const doc = readFileSync('docs/decisions.md', 'utf8');
  const between = /<!-- permission-table:start -->([\s\S]*?)<!-- permission-table:end -->/.exec(doc);
  t.ok(between, 'the doc marks its copy of the table (npm run docs:permissions writes it)');
  t.same(
    cells(between![1]!),
    cells(permissionTableMarkdown()),
    'the same operations, roles and doors (npm run docs:permissions writes the table)',
  );
});

t.test('a role that may act on a kind of record may view it (invoices: issuing implies reading)', async (t) => {
  for (const op of OPERATIONS) {
    const view = `${op.split('.')[0]}.view`;
    if (op === view || !(OPERATIONS as readonly string[]).includes(view)) continue;
    for (const role of ROLES)
      if (can(role, op)) t.ok(can(role, view as typeof op), `${role} may ${op}, so may ${view}`);
  }
  t.ok(can('counsellor', 'invoices.view'), 'a counsellor issues invoices and records payments, so reads them');
});

/** Every command of the program, with its `group name` path. */
function commandsOf(program: Command): Command[] {
  return program.commands.flatMap((c) => [c, ...commandsOf(c)]);
}

t.test(
  'the CLI: every command taking --as is in the table, and the table names only commands that exist',
  async (t) => {
    const commands = commandsOf(buildProgram());
    const withAs = commands.filter((c) => c.options.some((o) => o.long === '--as'));
    t.ok(withAs.length >= 20, `${withAs.length} commands act as a staff member`);
    for (const command of withAs)
      t.doesNotThrow(() => cliOperation(command), `${command.parent?.name()} ${command.name()}`);
    const paths = new Set(withAs.map((c) => `${c.parent?.name()} ${c.name()}`));
    for (const op of OPERATIONS) for (const cli of PERMISSIONS[op].cli) t.ok(paths.has(cli), `${op}: ${cli} exists`);
  },
);

t.test('every role × every operation through the admin HTTP interface, as the table says', async (t) => {
  const app = await startApp(t, { config: { adminToken: 'operator-token-for-tests-0123456789abcdef' } });
  const ws = await seedWorkspace(app, everyRole());
  const document = await servedDocument(app, '/admin/openapi.json');
  // The platform operator's one operation (ADMIN_TOKEN) is no member's: the table does not list it.
  const routes = operationsOf(document).filter((r) => r.operation.operationId !== 'createWorkspace');
  const listed = new Set(routes.map((r) => r.operation.operationId));
  for (const op of OPERATIONS)
    for (const id of PERMISSIONS[op].admin) t.ok(listed.has(id), `${op}: ${id} is an operation of the document`);
  for (const route of routes) {
    const operation = operationOfAdminRoute(route.operation.operationId);
    t.ok(operation, `${route.operation.operationId} is in the table`);
    const url = route.path
      .replace('{workspace}', ws.workspace.slug)
      .replace(/\{(id|leadId|deliveryId)\}/g, () => randomUUID())
      .replace('{module}', 'sop');
    for (const role of ROLES) {
      const response = await app.request(url, {
        method: route.method.toUpperCase(),
        headers: { authorization: `Bearer ${await ws.tokenFor(memberOf(role))}` },
        ...(route.method === 'get' ? {} : { json: {} }),
      });
      const body = (await response.json().catch(() => ({}))) as { error?: string };
      const refused = response.status === 403 && body.error === 'forbidden';
      t.equal(refused, !can(role, operation!), `${role} ${route.operation.operationId}: ${response.status}`);
    }
  }
});

t.test('every role × every operation through the CLI door (staffActor, which every --as command calls)', async (t) => {
  const app = await startApp(t);
  const ws = await seedWorkspace(app, everyRole());
  for (const op of OPERATIONS.filter((o) => PERMISSIONS[o].cli.length > 0))
    for (const role of ROLES) {
      const act = () => staffActor(ws.workspace, memberOf(role).toUpperCase(), op);
      if (can(role, op)) t.match(act(), { type: 'user', email: memberOf(role) }, `${role} may ${op}`);
      else t.throws(act, /permission table does not let/, `${role} may not ${op}`);
    }
  t.throws(() => staffActor(ws.workspace, 'former@northstar.example', 'tasks.change'), /active user/);
});
