import type { FastifyRequest } from 'fastify';
import type { AppServices } from '../../bootstrap.js';
import { inviteFirstOwner } from '../../identity/invitations.js';
import { DefinitionError, validateDefinition, WorkspaceDefinition } from '../../workspaces/definition.js';
import { applyDefinition, findWorkspace } from '../../workspaces/repository.js';
import { checkOperatorToken } from '../admin-auth.js';
import { ApiError } from '../errors.js';
import { OperatorWorkspaceCreated, operatorErrorResponses } from '../schemas/admin.js';
import { answer } from '../schemas/error.js';
import type { TypedApp } from '../typed-app.js';

/**
 * The platform operator's one operation: create a workspace from its definition and invite its first owner (mailed
 * when SMTP is set; else the link is in the answer, once, when the owner's email has no account that can sign in;
 * an existing account accepts after signing in as itself). ADMIN_TOKEN opens this and nothing else; everything a
 * workspace's staff do goes through their own sign-in or personal access tokens.
 */
export function registerOperatorRoutes(app: TypedApp, services: AppServices, adminToken: string): void {
  const refuse = () => new ApiError(401, 'invalid_admin_token', 'The operator token is missing or wrong');
  const authenticateOperator = (request: FastifyRequest) => checkOperatorToken(request, adminToken, services, refuse);

  app.post(
    '/v1/workspaces',
    {
      schema: {
        tags: ['workspaces'],
        operationId: 'createWorkspace',
        summary: 'Create a workspace from its definition and invite its first owner (the operator, ADMIN_TOKEN)',
        security: [{ operatorToken: [] }],
        body: WorkspaceDefinition,
        response: {
          201: answer(OperatorWorkspaceCreated, 'The workspace was created and its first owner invited'),
          ...operatorErrorResponses(),
        },
      },
      onRequest: authenticateOperator,
    },
    async (request, reply) => {
      // The schema checked the shape; the cross-references are checked here, each named by its field.
      let definition;
      try {
        definition = validateDefinition(request.body);
      } catch (error) {
        if (!(error instanceof DefinitionError)) throw error;
        throw new ApiError(400, 'validation_failed', 'The workspace definition is invalid', {
          fields: fieldsOfProblems(error.problems),
        });
      }
      if (await findWorkspace(services.pool, definition.slug))
        throw new ApiError(409, 'workspace_exists', 'A workspace with this slug exists; its owners change it');
      const { workspace } = await applyDefinition(services.pool, definition, services.secretBox);
      const owner = await inviteFirstOwner(services, workspace, true);
      // The link is in the answer only when it can do nothing but set up a new account and no mail carries it.
      return reply.status(201).send({
        workspace: { id: workspace.id, slug: workspace.slug, name: workspace.name },
        owner: {
          email: owner.email,
          invitation_url: owner.link,
          mailed: owner.mailed,
          existing_account: owner.existingAccount,
        },
      });
    },
  );
}

/** A definition's problems (`where: what`) as the Error's `fields`, several of one field joined. */
function fieldsOfProblems(problems: string[]): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const problem of problems) {
    const split = problem.indexOf(': ');
    const [where, what] = split > 0 ? [problem.slice(0, split), problem.slice(split + 2)] : ['body', problem];
    const name = where === '(top level)' ? 'body' : where;
    fields[name] = fields[name] ? `${fields[name]}; ${what}` : what;
  }
  return fields;
}
