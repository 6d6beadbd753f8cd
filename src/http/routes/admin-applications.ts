import type { FastifyRequest } from 'fastify';
import { handleApplicationCommand } from '../../commands/applications/application-commands.js';
import { applicationView } from '../../commands/applications/application-view.js';
import { convertLeadToApplication } from '../../commands/applications/convert-lead.js';
import type { ApplicationCommand } from '../../domain/applications/index.js';
import { findApplication } from '../../projections/applications.js';
import { staffScope } from '../admin-auth.js';
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
} from '../../schemas/application.js';
import { adminErrorResponses } from '../schemas/admin.js';
import { answer } from '../schemas/error.js';
import type { AppServices } from '../../bootstrap.js';
import type { TypedApp } from '../typed-app.js';

/** Under the admin interface's prefix (/admin/v1, src/http/routes/admin.ts). */
const BASE = '/workspaces/:workspace';
const ERRORS = adminErrorResponses(400, 401, 403, 404, 409);
const CASE_AFTER = answer(AdminApplication, 'The case as it is after the operation');
const TAGS = ['applications'];

/** The staff member's scope for a route: the workspace, live or sandbox, and the command context. */
function staff(services: AppServices, request: FastifyRequest, sandbox: boolean | undefined) {
  return staffScope(request, sandbox, services.now());
}

/** Applies one operation to the case and answers the case as it is after. */
async function operate(
  services: AppServices,
  request: FastifyRequest,
  params: { workspace: string; id: string },
  query: { sandbox?: boolean },
  command: ApplicationCommand,
) {
  const { sandbox, context } = staff(services, request, query.sandbox);
  const { state } = await handleApplicationCommand(services.store, context, params.id, () => command);
  return applicationView(state, sandbox);
}

const caseRoute = {
  tags: TAGS,
  params: AdminApplicationParams,
  querystring: ModeQuery,
  response: { 200: CASE_AFTER, ...ERRORS },
};
const moduleRoute = {
  tags: TAGS,
  params: AdminModuleParams,
  querystring: ModeQuery,
  response: { 200: CASE_AFTER, ...ERRORS },
};

/**
 * The workspace UI's operations on cases, for staff; the admin interface's hook has authenticated the staff member
 * (recorded as the actor). Live data unless `?sandbox=true`. Every operation answers with the case as it is afterwards.
 */
export function registerAdminApplicationRoutes(app: TypedApp, services: AppServices): void {
  registerConvertLead(app, services);
  registerGetApplication(app, services);
  registerMoveStage(app, services);
  registerSetStatus(app, services);
  registerRecordOutcome(app, services);
  registerAddModule(app, services);
  registerSetModuleState(app, services);
  registerSaveModuleDetails(app, services);
  registerModuleSwitches(app, services);
}

/** POST …/leads/{leadId}/convert: opens a case from the lead. */
function registerConvertLead(app: TypedApp, services: AppServices): void {
  app.post(
    `${BASE}/leads/:leadId/convert`,
    {
      schema: {
        tags: TAGS,
        operationId: 'convertLead',
        summary: 'Convert a lead into an application (APP-<number>); the lead becomes converted and locked',
        params: AdminLeadParams,
        querystring: ModeQuery,
        response: { 201: answer(AdminApplication, 'The case opened from the lead'), ...ERRORS },
      },
    },
    async (request, reply) => {
      const { workspace, sandbox, context } = staff(services, request, request.query.sandbox);
      const state = await convertLeadToApplication(services, context, workspace, request.params.leadId);
      return reply.status(201).send(applicationView(state, sandbox));
    },
  );
}

/** GET …/applications/{id} */
function registerGetApplication(app: TypedApp, services: AppServices): void {
  app.get(
    `${BASE}/applications/:id`,
    {
      schema: {
        tags: TAGS,
        operationId: 'getApplication',
        summary: 'Read a case with its stages and every module',
        params: AdminApplicationParams,
        querystring: ModeQuery,
        response: { 200: answer(AdminApplication, 'The case'), ...ERRORS },
      },
    },
    async (request) => {
      const { workspace, sandbox } = staff(services, request, request.query.sandbox);
      const row = await findApplication(services.pool, workspace.id, sandbox, request.params.id);
      if (!row) throw notFound('application');
      return applicationView(row.state, sandbox);
    },
  );
}

/** POST …/applications/{id}/stage */
function registerMoveStage(app: TypedApp, services: AppServices): void {
  app.post(
    `${BASE}/applications/:id/stage`,
    {
      schema: {
        operationId: 'moveApplicationStage',
        summary: 'Move the case to a stage (forward, backward or skipping stages)',
        body: MoveStageBody,
        ...caseRoute,
      },
    },
    async (request) =>
      operate(services, request, request.params, request.query, { type: 'move_to_stage', stage: request.body.stage }),
  );
}

/** POST …/applications/{id}/status */
function registerSetStatus(app: TypedApp, services: AppServices): void {
  app.post(
    `${BASE}/applications/:id/status`,
    {
      schema: {
        operationId: 'setApplicationStatus',
        summary: 'Set the status: active, on_hold or closed',
        body: SetStatusBody,
        ...caseRoute,
      },
    },
    async (request) =>
      operate(services, request, request.params, request.query, { type: 'set_status', status: request.body.status }),
  );
}

/** POST …/applications/{id}/outcome */
function registerRecordOutcome(app: TypedApp, services: AppServices): void {
  app.post(
    `${BASE}/applications/:id/outcome`,
    {
      schema: {
        operationId: 'recordApplicationOutcome',
        summary: 'Record the visa outcome: granted, refused or withdrawn',
        body: OutcomeBody,
        ...caseRoute,
      },
    },
    async (request) =>
      operate(services, request, request.params, request.query, {
        type: 'record_outcome',
        outcome: request.body.outcome,
      }),
  );
}

/** POST …/applications/{id}/modules */
function registerAddModule(app: TypedApp, services: AppServices): void {
  app.post(
    `${BASE}/applications/:id/modules`,
    {
      schema: {
        operationId: 'addApplicationModule',
        summary: 'Add a custom module to the case (at the end, or after or before a module)',
        body: AddModuleBody,
        ...caseRoute,
      },
    },
    async (request) =>
      operate(services, request, request.params, request.query, { type: 'add_module', ...request.body }),
  );
}

/** PUT …/applications/{id}/modules/{module}/state */
function registerSetModuleState(app: TypedApp, services: AppServices): void {
  app.put(
    `${BASE}/applications/:id/modules/:module/state`,
    {
      schema: {
        operationId: 'setApplicationModuleState',
        summary: 'Mark a module updated or pending',
        body: ModuleStateBody,
        ...moduleRoute,
      },
    },
    async (request) =>
      operate(services, request, request.params, request.query, {
        type: 'set_module_state',
        module_key: request.params.module,
        state: request.body.state,
      }),
  );
}

/** PATCH …/applications/{id}/modules/{module} */
function registerSaveModuleDetails(app: TypedApp, services: AppServices): void {
  app.patch(
    `${BASE}/applications/:id/modules/:module`,
    {
      schema: {
        operationId: 'saveApplicationModuleDetails',
        summary: "Save a module's name or details (not a module change: no webhook event)",
        body: SaveModuleBody,
        ...moduleRoute,
      },
    },
    async (request) =>
      operate(services, request, request.params, request.query, {
        type: 'save_module_details',
        module_key: request.params.module,
        ...request.body,
      }),
  );
}

/** POST …/modules/{module}/select, /deselect and /restore: one route each, from a table. */
function registerModuleSwitches(app: TypedApp, services: AppServices): void {
  for (const [action, type, operationId] of [
    ['select', 'select_module', 'selectApplicationModule'],
    ['deselect', 'deselect_module', 'deselectApplicationModule'],
    ['restore', 'restore_module', 'restoreApplicationModule'],
  ] as const) {
    app.post(
      `${BASE}/applications/:id/modules/:module/${action}`,
      {
        schema: {
          operationId,
          summary:
            action === 'restore'
              ? 'Restore a module as the roadmap defines it: switched on, pending, roadmap name, details cleared'
              : `Switch a module ${action === 'select' ? 'on' : 'off'} on this case`,
          ...moduleRoute,
        },
      },
      async (request) =>
        operate(services, request, request.params, request.query, { type, module_key: request.params.module }),
    );
  }
}
