import { Type } from 'typebox';
import { WorkspaceRef } from '../../schemas/workspace-ref.js';
import { describedErrors } from './error.js';

export const AdminWorkspaceParams = Type.Object({ workspace: WorkspaceRef }, { additionalProperties: false });

/**
 * The staff member acting: checked by the admin interface's authentication hook (src/http/admin-auth.ts) before
 * anything else of the request, and described on every admin operation as a header parameter.
 */
export const AdminUserHeaders = Type.Object({
  'x-admin-user': Type.String({
    format: 'email',
    maxLength: 254,
    description:
      'The email of the staff member acting: an active user of the workspace. Recorded as the actor of what the ' +
      'operation changes.',
  }),
});

/** What each refusal of the admin interface means, as its OpenAPI response description. */
const ADMIN_ERRORS: Record<number, string> = {
  400: '`validation_failed` with `fields` (a missing or malformed `X-Admin-User` included)',
  401: '`invalid_admin_token`: the admin token is missing or wrong',
  403: '`unknown_staff_user`: `X-Admin-User` is not an active user of the workspace',
  404: '`not_found`: no such workspace, or nothing with this id in it; `module_not_found` for a module of a case',
  409: 'The case or endpoint is in a state that refuses the operation, for example `application_closed`',
  413: '`document_too_large`: the file is larger than its document type allows',
  415: "`unsupported_content_type`: the file's bytes are not a content type its document type allows",
  422: '`document_infected`: the virus scan found a signature; the file was refused and deleted, the attempt recorded',
};

export const adminErrorResponses = (...statuses: number[]) => describedErrors(ADMIN_ERRORS, statuses);
