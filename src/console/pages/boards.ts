import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type { AppServices } from '../../bootstrap.js';
import { handleApplicationCommand } from '../../commands/applications/application-commands.js';
import { isCommandError, type CommandError } from '../../commands/errors.js';
import { updateLead } from '../../commands/leads/update-lead.js';
import type { TypedApp } from '../../http/typed-app.js';
import { can } from '../../identity/permissions.js';
import { findApplication } from '../../projections/applications.js';
import { findLead } from '../../projections/leads-queries.js';
import { applicationBoardPath, applicationColumns } from '../board/applications-board.js';
import { boardFilterOf, filterPairs, type BoardQuery } from '../board/filter.js';
import { leadBoardPath, leadColumns } from '../board/leads-board.js';
import { BOARD_CSS, boardFilters, boardOf } from '../board/render.js';
import { BOARD_SCRIPT } from '../board/script.js';
import { ConsoleRefusal, sendPage, type MemberView } from '../context.js';
import { contextOf, refusalErrors } from '../forms.js';
import { html } from '../html.js';
import { page } from '../layout.js';
import { viewOf } from '../routes.js';
import { FormBody, Text, Uuid, WorkspaceParams } from './record-schemas.js';

const FILTERS = {
  owner: Type.Optional(Text(100)),
  branch: Type.Optional(Text(100)),
  country: Type.Optional(Text(20)),
  visa_type: Type.Optional(Text(100)),
};
const BoardQuerySchema = Type.Object({ ...FILTERS, moved: Type.Optional(Uuid) });
const MoveForm = FormBody({ ...FILTERS, id: Type.Optional(Text(40)), stage: Type.Optional(Text(100)) });

/** What a board page says above its columns: a move done, or one refused (also on its card). */
interface Outcome {
  message?: string;
  alert?: string;
  refusals?: Record<string, string>;
}

async function boardPage(
  services: AppServices,
  view: MemberView,
  kind: 'leads' | 'applications',
  query: BoardQuery,
  outcome: Outcome = {},
): Promise<{ status: number; body: string }> {
  const { filter, errors } = boardFilterOf(view, query);
  const leads = kind === 'leads';
  const path = leads ? leadBoardPath(view) : applicationBoardPath(view);
  const refusals = outcome.refusals ?? {};
  const columns = leads
    ? await leadColumns(services, view, filter, query, refusals)
    : await applicationColumns(services, view, filter, query, refusals);
  const movable = can(view.role, leads ? 'leads.change' : 'applications.change');
  const listPath = `/console/w/${view.workspace.slug}/${kind}`;
  const body = html`<link rel="stylesheet" href="/console/assets/board.css" />
    <p><a href="${listPath}">${leads ? 'Leads' : 'Applications'} as a list</a></p>
    ${boardFilters(view, path, leads ? 'Filter the lead board' : 'Filter the applications board', query, errors)}
    ${boardOf(view, {
      columns,
      moveAction: `${path}/move`,
      query: Object.fromEntries(filterPairs(query)),
      noun: leads ? 'leads' : 'cases',
      order: leads
        ? 'most recently changed first, as in the list (a count past 10,000 is an estimate, marked “about”)'
        : 'newest case first, as in the list',
      message: outcome.message,
      alert: outcome.alert ?? (Object.keys(errors).length ? 'Some filters were not applied: see each one.' : undefined),
      movable,
    })}`;
  const status = Object.keys(errors).length ? 400 : 200;
  return {
    status,
    body: page(view.frame(leads ? 'Lead board' : 'Applications board', leads ? 'Leads' : 'Applications'), body),
  };
}

/** A command's refusal as one sentence for the card (a stage move has no field of its own to put it by). */
function refusalText(error: CommandError): { status: number; text: string } {
  const refused = refusalErrors(error, {}, 'card', { stage_key: 'the stage', lost_reason_key: 'the lost reason' });
  const text = Object.values(refused.errors).join(' ');
  const lostReason =
    error.refusal === 'rule' && (error.code === 'lost_reason_required' || 'lost_reason_key' in (error.fields ?? {}));
  return { status: refused.status, text: lostReason ? `${text} Choose it on the lead’s page.` : text };
}

/** Back to the board with its filters, saying which card moved. */
function movedTo(reply: FastifyReply, path: string, query: BoardQuery, id: string): FastifyReply {
  const params = new URLSearchParams([...filterPairs(query), ['moved', id]]);
  return reply.redirect(`${path}?${params.toString()}`, 303);
}

/** The page's words for a card just moved: its name and where it is now. */
async function movedMessage(
  services: AppServices,
  view: MemberView,
  kind: 'leads' | 'applications',
  id: string | undefined,
): Promise<string | undefined> {
  if (!id) return undefined;
  if (kind === 'leads') {
    const lead = await findLead(services.pool, view.workspace.id, false, id);
    return lead ? `${lead.full_name || 'The erased person’s lead'} moved to ${lead.stage.name}.` : undefined;
  }
  const row = await findApplication(services.pool, view.workspace.id, false, id);
  return row ? `${row.status.case_ref} moved to ${row.status.stage.name}.` : undefined;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function registerBoardPages(app: TypedApp, services: AppServices): void {
  app.get('/assets/board.js', { config: { console: 'open' } }, async (_request, reply) =>
    reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=3600').send(BOARD_SCRIPT),
  );
  app.get('/assets/board.css', { config: { console: 'open' } }, async (_request, reply) =>
    reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=3600').send(BOARD_CSS),
  );

  for (const kind of ['leads', 'applications'] as const) {
    const viewing = kind === 'leads' ? 'leads.view' : 'applications.view';
    const changing = kind === 'leads' ? 'leads.change' : 'applications.change';
    app.get(
      `/w/:slug/${kind}/board`,
      {
        schema: { params: WorkspaceParams, querystring: BoardQuerySchema },
        config: { console: { operation: viewing } },
      },
      async (request, reply) => {
        const view = viewOf(request);
        const message = await movedMessage(services, view, kind, request.query.moved);
        const answer = await boardPage(services, view, kind, request.query, { message });
        return sendPage(reply, answer.body, answer.status);
      },
    );

    app.post(
      `/w/:slug/${kind}/board/move`,
      { schema: { params: WorkspaceParams, body: MoveForm }, config: { console: { operation: changing } } },
      async (request, reply) => {
        const view = viewOf(request);
        const { id, stage } = request.body;
        const query: BoardQuery = request.body;
        const path = kind === 'leads' ? leadBoardPath(view) : applicationBoardPath(view);
        if (!id || !UUID.test(id)) throw new ConsoleRefusal(404, 'There is no such card on this board.');
        const refuse = async (status: number, text: string) => {
          const answer = await boardPage(services, view, kind, query, {
            alert: `Not moved: ${text}`,
            refusals: { [id]: text },
          });
          return sendPage(reply, answer.body, status);
        };
        if (!stage) return refuse(400, 'Choose a stage to move it to.');
        try {
          if (kind === 'leads') await moveLead(services, view, id, stage);
          else await moveApplication(services, view, id, stage);
        } catch (error) {
          if (!isCommandError(error)) throw error;
          const refused = refusalText(error);
          return refuse(refused.status, refused.text);
        }
        return movedTo(reply, path, query, id);
      },
    );
  }
}

/** The console's lead stage move (the lead page's change form runs the same command). */
async function moveLead(services: AppServices, view: MemberView, leadId: string, stage: string): Promise<void> {
  const lead = await findLead(services.pool, view.workspace.id, false, leadId);
  if (!lead) throw new ConsoleRefusal(404, 'There is no such lead in this workspace.');
  if (lead.stage.key === stage) return;
  await updateLead(services, {
    workspace: view.workspace,
    sandbox: false,
    leadId,
    patch: { stage_key: stage },
    context: contextOf(view),
  });
}

/** The console's case stage move (the application page's Move form runs the same command). */
async function moveApplication(services: AppServices, view: MemberView, id: string, stage: string): Promise<void> {
  if (!(await findApplication(services.pool, view.workspace.id, false, id)))
    throw new ConsoleRefusal(404, 'There is no such application in this workspace.');
  await handleApplicationCommand(services.store, contextOf(view)(services.now()), id, () => ({
    type: 'move_to_stage',
    stage,
  }));
}
