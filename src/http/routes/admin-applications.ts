import type { FastifyRequest } from 'fastify';
import { applyApplicationOperation } from '../../commands/applications/apply-operation.js';
import { applicationView } from '../../commands/applications/application-view.js';
import { convertLeadToApplication } from '../../commands/applications/convert-lead.js';
import { staffContext } from '../../commands/run-command.js';
import type { ApplicationCommand } from '../../domain/applications/index.js';
import { findApplication } from '../../projections/applications.js';
import { authenticateAdmin } from '../admin-auth.js';
import { notFound } from '../errors.js';
import {
  AddModuleBody,
  AdminApplication,
  AdminApplicationParams,
  AdminLeadParams,
  AdminModuleParams,
  ModeQuery,
  ModuleStateBody,
  MoveStageBody,
  OutcomeBody,
  SaveModuleBody,
  SetStatusBody,
} from '../schemas/application.js';
import { errorResponses } from '../schemas/error.js';
import type { AppServices, TypedApp } from '../services.js';

const BASE = '/admin/v1/workspaces/:workspace';
const ERRORS = errorResponses(400, 401, 403, 404, 409);

/**
 * The workspace UI's operations on cases, for staff: ADMIN_TOKEN plus X-Admin-User (recorded as the actor). Live data
 * unless `?sandbox=true`. Every operation answers with the case as it is afterwards.
 */
export function registerAdminApplicationRoutes(app: TypedApp, services: AppServices): void {
  async function staff(request: FastifyRequest, workspace: string, sandbox: boolean | undefined) {
    const { workspace: ws, actor } = await authenticateAdmin(request, services.config.adminToken, services.pool, workspace);
    return { workspace: ws, sandbox: sandbox ?? false, context: staffContext(ws.id, sandbox ?? false, actor, services.now()) };
  }

  app.post(
    `${BASE}/leads/:leadId/convert`,
    {
      schema: {
        tags: ['admin'],
        summary: 'Convert a lead into an application (APP-<number>); the lead becomes converted and locked',
        params: AdminLeadParams,
        querystring: ModeQuery,
        response: { 201: AdminApplication, ...ERRORS },
      },
    },
    async (request, reply) => {
      const { workspace, sandbox, context } = await staff(request, request.params.workspace, request.query.sandbox);
      const state = await convertLeadToApplication(services, context, workspace, request.params.leadId);
      return reply.status(201).send(applicationView(state, sandbox));
    },
  );

  app.get(
    `${BASE}/applications/:id`,
    { schema: { tags: ['admin'], summary: 'Read a case with its stages and every module', params: AdminApplicationParams, querystring: ModeQuery, response: { 200: AdminApplication, ...ERRORS } } },
    async (request) => {
      const { workspace, sandbox } = await staff(request, request.params.workspace, request.query.sandbox);
      const row = await findApplication(services.pool, workspace.id, sandbox, request.params.id);
      if (!row) throw notFound('application');
      return applicationView(row.state, sandbox);
    },
  );

  async function operate(request: FastifyRequest, params: { workspace: string; id: string }, query: { sandbox?: boolean }, command: ApplicationCommand) {
    const { sandbox, context } = await staff(request, params.workspace, query.sandbox);
    const { state } = await applyApplicationOperation(services.store, context, params.id, command);
    return applicationView(state, sandbox);
  }

  const caseRoute = { params: AdminApplicationParams, querystring: ModeQuery, response: { 200: AdminApplication, ...ERRORS } };
  const moduleRoute = { params: AdminModuleParams, querystring: ModeQuery, response: { 200: AdminApplication, ...ERRORS } };

  app.post(
    `${BASE}/applications/:id/stage`,
    { schema: { tags: ['admin'], summary: 'Move the case to a stage (forward, backward or skipping stages)', body: MoveStageBody, ...caseRoute } },
    async (request) => operate(request, request.params, request.query, { type: 'move_to_stage', stage: request.body.stage }),
  );
  app.post(
    `${BASE}/applications/:id/status`,
    { schema: { tags: ['admin'], summary: 'Set the status: active, on_hold or closed', body: SetStatusBody, ...caseRoute } },
    async (request) => operate(request, request.params, request.query, { type: 'set_status', status: request.body.status }),
  );
  app.post(
    `${BASE}/applications/:id/outcome`,
    { schema: { tags: ['admin'], summary: 'Record the visa outcome: granted, refused or withdrawn', body: OutcomeBody, ...caseRoute } },
    async (request) => operate(request, request.params, request.query, { type: 'record_outcome', outcome: request.body.outcome }),
  );
  app.post(
    `${BASE}/applications/:id/modules`,
    { schema: { tags: ['admin'], summary: 'Add a custom module to the case (at the end, or after or before a module)', body: AddModuleBody, ...caseRoute } },
    async (request) => operate(request, request.params, request.query, { type: 'add_module', ...request.body }),
  );
  app.put(
    `${BASE}/applications/:id/modules/:module/state`,
    { schema: { tags: ['admin'], summary: 'Mark a module updated or pending', body: ModuleStateBody, ...moduleRoute } },
    async (request) => operate(request, request.params, request.query, { type: 'set_module_state', module_key: request.params.module, state: request.body.state }),
  );
  app.patch(
    `${BASE}/applications/:id/modules/:module`,
    { schema: { tags: ['admin'], summary: "Save a module's name or details (not a module change: no webhook event)", body: SaveModuleBody, ...moduleRoute } },
    async (request) => operate(request, request.params, request.query, { type: 'save_module_details', module_key: request.params.module, ...request.body }),
  );
  for (const [action, type] of [
    ['select', 'select_module'],
    ['deselect', 'deselect_module'],
    ['restore', 'restore_module'],
  ] as const) {
    app.post(
      `${BASE}/applications/:id/modules/:module/${action}`,
      {
        schema: {
          tags: ['admin'],
          summary:
            action === 'restore'
              ? 'Restore a module as the roadmap defines it: switched on, pending, roadmap name, details cleared'
              : `Switch a module ${action === 'select' ? 'on' : 'off'} on this case`,
          ...moduleRoute,
        },
      },
      async (request) => operate(request, request.params, request.query, { type, module_key: request.params.module }),
    );
  }
}
