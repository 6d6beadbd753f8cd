import type { WorkspaceDefinition } from '../../src/workspaces/definition.js';
import { ROLES, type Role } from '../../src/identity/permissions.js';

/** The email of the member holding each role in a workspace made by `everyRole()`. */
export const memberOf = (role: Role) => `${role}@northstar.example`;

/** Users of every role (one each), and a former member. */
export function everyRole(): Pick<WorkspaceDefinition, 'users'> {
  return {
    users: [
      ...ROLES.map((role) => ({ name: `The ${role}`, email: memberOf(role), role, branch: 'DEL' })),
      { name: 'Former', email: 'former@northstar.example', role: 'admin' as const, branch: 'DEL', active: false },
    ],
  };
}
