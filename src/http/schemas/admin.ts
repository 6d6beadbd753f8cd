import { Type } from 'typebox';
import { WorkspaceRef } from '../../schemas/workspace-ref.js';
import { describedErrors } from './error.js';

export const AdminWorkspaceParams = Type.Object({ workspace: WorkspaceRef }, { additionalProperties: false });

/** What each refusal of the admin interface means, as its OpenAPI response description. */
const ADMIN_ERRORS: Record<number, string> = {
  400: '`validation_failed` with `fields`',
  401: '`invalid_admin_token`: the personal access token is missing, wrong, expired or revoked, or its member left or changed role',
  403: '`forbidden`: the token is of another workspace, or its role may not do this (the permission table)',
  404: '`not_found`: no such workspace, or nothing with this id in it; `module_not_found` for a module of a case',
  409: 'The case or endpoint is in a state that refuses the operation, for example `application_closed`',
  413: '`document_too_large`: the file is larger than its document type allows',
  415: "`unsupported_content_type`: the file's bytes are not a content type its document type allows",
  422: '`document_infected`: the virus scan found a signature; the file was refused and deleted, the attempt recorded',
  429: '`rate_limited` with `scope` and `retry_after` (and `Retry-After`): too many replays of this endpoint',
};

export const adminErrorResponses = (...statuses: number[]) => describedErrors(ADMIN_ERRORS, statuses);

/** POST /admin/v1/workspaces: the operator's answer, the workspace and how its first owner was invited. */
export const OperatorWorkspaceCreated = Type.Object(
  {
    workspace: Type.Object(
      { id: Type.String({ format: 'uuid' }), slug: Type.String(), name: Type.String() },
      { additionalProperties: false },
    ),
    owner: Type.Object(
      {
        email: Type.String(),
        invitation_url: Type.Union([Type.String(), Type.Null()], {
          description: 'the invitation link, only when no mail carries it and it can only set up a new account',
        }),
        mailed: Type.Boolean(),
        existing_account: Type.Boolean(),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

/** What the operator's route may refuse, as its OpenAPI response descriptions. */
export const operatorErrorResponses = () =>
  describedErrors(
    {
      400: "`validation_failed` with `fields`: the definition's shape or its cross-references",
      401: '`invalid_admin_token`: the operator token (ADMIN_TOKEN) is missing or wrong',
      409: '`workspace_exists`: a workspace has this slug',
    },
    [400, 401, 409],
  );
