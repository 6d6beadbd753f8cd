/** The roles a member holds in a workspace, from most to least powerful. */
export const ROLES = ['owner', 'admin', 'manager', 'counsellor', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

const ALL: readonly Role[] = ROLES;
const STAFF: readonly Role[] = ['owner', 'admin', 'manager', 'counsellor'];
const MANAGERS: readonly Role[] = ['owner', 'admin', 'manager'];
const ADMINS: readonly Role[] = ['owner', 'admin'];
const OWNERS: readonly Role[] = ['owner'];
const OVERSIGHT: readonly Role[] = ['owner', 'admin', 'manager', 'viewer'];

export interface OperationRule {
  /** What the operation does, in the words of the permission table (docs/decisions.md). */
  description: string;
  roles: readonly Role[];
  /** Asks for a password or passkey entered in the last few minutes (a recent sign-in) in the console. */
  recentSignIn: boolean;
  /** Where the operation can be done: console pages, admin HTTP operation ids and CLI commands (`--as`). */
  console: boolean;
  admin: readonly string[];
  cli: readonly string[];
}

function rule(
  description: string,
  roles: readonly Role[],
  doors: { console?: boolean; admin?: string[]; cli?: string[]; recentSignIn?: boolean },
): OperationRule {
  return {
    description,
    roles,
    recentSignIn: doors.recentSignIn ?? false,
    console: doors.console ?? false,
    admin: doors.admin ?? [],
    cli: doors.cli ?? [],
  };
}

/**
 * Every operation of the console, the admin HTTP interface and the CLI (`--as`), and the roles allowed it: the one
 * permission table. The console (src/console/routes.ts), the admin interface (src/http/admin-auth.ts) and the CLI
 * (src/cli/staff.ts) all ask `can` and nothing else.
 */
export const PERMISSIONS = {
  'workspace.view': rule('See the workspace and switch to it', ALL, { console: true }),
  'access_tokens.manage': rule('Create and revoke one’s own personal access tokens', ALL, {
    console: true,
    recentSignIn: true,
  }),
  'keys.view': rule('List API keys (last four, mode, scopes, last use, expiry)', MANAGERS, { console: true }),
  'keys.create': rule('Create a public key or a test key', ADMINS, { console: true }),
  'keys.create_live_secret': rule('Create a live secret key', ADMINS, { console: true, recentSignIn: true }),
  'keys.revoke': rule('Revoke an API key', ADMINS, { console: true }),
  'sandbox.view': rule('See a test key’s sandbox submissions', MANAGERS, { console: true }),
  'webhooks.view': rule('See webhook endpoints and their delivery log', OVERSIGHT, {
    console: true,
    admin: ['listWorkspaceWebhookEndpoints', 'listWebhookDeliveries'],
  }),
  'webhooks.manage': rule('Create, change, disable and delete a webhook endpoint', ADMINS, {
    console: true,
    admin: ['updateWorkspaceWebhookEndpoint'],
  }),
  'webhooks.resend': rule('Resend a delivery', ADMINS, {
    console: true,
    admin: ['resendWebhookDelivery'],
    cli: ['webhook resend'],
  }),
  'webhooks.replay': rule(
    'Replay an endpoint’s events of a time window (at most 30 days back), or only those that failed since a time',
    ADMINS,
    { console: true, admin: ['replayWorkspaceWebhookEvents'], cli: ['webhook replay'] },
  ),
  'webhooks.test': rule('Send a webhook.test event', ADMINS, {
    console: true,
    admin: ['sendWebhookTest'],
    cli: ['webhook test'],
  }),
  'webhooks.resume': rule('Resume a paused endpoint', ADMINS, {
    console: true,
    admin: ['resumeWebhookEndpoint'],
    cli: ['webhook resume'],
  }),
  'webhooks.rotate_secret': rule('Rotate an endpoint’s signing secret', ADMINS, {
    console: true,
    admin: ['rotateWebhookSecret'],
    cli: ['webhook rotate-secret'],
    recentSignIn: true,
  }),
  'members.view': rule('List the members and their roles', ALL, { console: true }),
  'members.invite': rule('Invite a member (any role but owner)', ADMINS, { console: true, recentSignIn: true }),
  'members.change': rule(
    'Change a member’s role, deactivate or reactivate them, or reset their passkeys (not an owner)',
    ADMINS,
    { console: true, recentSignIn: true },
  ),
  'members.manage_owners': rule(
    'Make, unmake, invite, deactivate or reactivate an owner, or reset an owner’s passkeys',
    OWNERS,
    { console: true, recentSignIn: true },
  ),
  'members.require_passkeys': rule('Require passkeys at sign-in of owners and admins, or of every member', OWNERS, {
    console: true,
    recentSignIn: true,
  }),
  'applications.view': rule('Read a case', ALL, { console: true, admin: ['getApplication'] }),
  'applications.convert': rule('Convert a lead into a case', STAFF, {
    console: true,
    admin: ['convertLead'],
    cli: ['application convert'],
  }),
  'applications.change': rule('Move, set status or outcome, change modules of a case', STAFF, {
    console: true,
    admin: [
      'moveApplicationStage',
      'setApplicationStatus',
      'recordApplicationOutcome',
      'addApplicationModule',
      'setApplicationModuleState',
      'saveApplicationModuleDetails',
      'selectApplicationModule',
      'deselectApplicationModule',
      'restoreApplicationModule',
    ],
    cli: [
      'application move',
      'application status',
      'application outcome',
      'application module-state',
      'application module-select',
      'application module-deselect',
      'application module-restore',
      'application module-add',
      'application module-save',
    ],
  }),
  'documents.view': rule('List, read and download documents', ALL, {
    console: true,
    admin: ['listDocuments', 'getDocument', 'downloadDocument'],
  }),
  'documents.upload': rule('Upload a document', STAFF, {
    console: true,
    admin: ['uploadDocument'],
    cli: ['document upload'],
  }),
  'documents.reject': rule('Reject a document', STAFF, {
    console: true,
    admin: ['rejectDocument'],
    cli: ['document reject'],
  }),
  'history.view': rule('Read the history of a lead or case, and either as of a time', ALL, {
    console: true,
    admin: ['getLeadHistory', 'getApplicationHistory', 'getLeadAsOf', 'getApplicationAsOf'],
  }),
  'tasks.view': rule('List and read tasks', ALL, { console: true, admin: ['listTasks', 'getTask'] }),
  'tasks.change': rule('Create, change, complete and reopen tasks', STAFF, {
    console: true,
    admin: ['createTask', 'changeTask', 'completeTask', 'reopenTask'],
    cli: ['task create', 'task change', 'task complete', 'task reopen'],
  }),
  'invoices.view': rule('List and read invoices', ALL, { console: true, admin: ['listInvoices', 'getInvoice'] }),
  'invoices.issue': rule('Issue an invoice and record a payment', STAFF, {
    console: true,
    admin: ['issueInvoice', 'recordPayment'],
    cli: ['invoice issue', 'invoice pay'],
  }),
  'invoices.refund': rule('Create a refund and mark it paid', MANAGERS, {
    console: true,
    admin: ['createRefund', 'markRefundPaid'],
    cli: ['invoice refund', 'invoice refund-paid'],
  }),
  'leads.erase': rule('Erase a person’s personal data for good', ADMINS, {
    console: true,
    admin: ['eraseLead'],
    cli: ['lead erase'],
    recentSignIn: true,
  }),
  'leads.import': rule('Import leads from a CSV file (each row through the capture, as the member)', MANAGERS, {
    console: true,
  }),
  'workspace.export': rule('Export the workspace’s whole event log', ADMINS, {
    console: true,
    admin: ['exportWorkspaceLog'],
    recentSignIn: true,
  }),
  'workspace.settings': rule('Change the workspace’s console settings (its time zone)', ADMINS, { console: true }),
  'leads.view': rule('List, search and read leads with their timelines (the whole workspace, every branch)', ALL, {
    console: true,
  }),
  'leads.change': rule('Change a lead’s stage, owner, follow-up date and notes', STAFF, {
    console: true,
  }),
  'lists.export': rule(
    'Export a list as a CSV file (the rows its filters or a selection name; an erased person’s never)',
    MANAGERS,
    { console: true },
  ),
  'leads.create': rule('Enter a lead by hand (a walk-in or a phone call), as the API creates one', STAFF, {
    console: true,
  }),
  'audit.verify': rule('Verify the workspace’s hash chains and check a kept head', OVERSIGHT, { console: true }),
} satisfies Record<string, OperationRule>;

export type Operation = keyof typeof PERMISSIONS;
export const OPERATIONS = Object.keys(PERMISSIONS) as Operation[];

/** Whether a member with this role may do the operation: the one question every door asks. */
export function can(role: Role, operation: Operation): boolean {
  return PERMISSIONS[operation].roles.includes(role);
}

export function needsRecentSignIn(operation: Operation): boolean {
  return PERMISSIONS[operation].recentSignIn;
}

/** The operation an admin HTTP operation id performs; undefined for one the table does not name (refused). */
export function operationOfAdminRoute(operationId: string | undefined): Operation | undefined {
  return OPERATIONS.find((op) => PERMISSIONS[op].admin.includes(operationId ?? ''));
}

/** The operation a CLI command (`group name`) performs; undefined for one the table does not name. */
export function operationOfCliCommand(command: string): Operation | undefined {
  return OPERATIONS.find((op) => PERMISSIONS[op].cli.includes(command));
}

/** The permission table as Markdown, as docs/decisions.md holds it (a test checks they agree). */
export function permissionTableMarkdown(): string {
  const mark = (yes: boolean) => (yes ? 'yes' : '—');
  const head = `| Operation | ${ROLES.join(' | ')} | Recent sign-in | Console | Admin HTTP | CLI (\`--as\`) |`;
  const rule = `|${' --- |'.repeat(ROLES.length + 5)}`;
  const rows = OPERATIONS.map((op) => {
    const r = PERMISSIONS[op];
    const roles = ROLES.map((role) => mark(can(role, op)));
    const admin = r.admin.length ? r.admin.map((id) => `\`${id}\``).join(', ') : '—';
    const cli = r.cli.length ? r.cli.map((c) => `\`${c}\``).join(', ') : '—';
    return `| \`${op}\` ${r.description} | ${roles.join(' | ')} | ${mark(r.recentSignIn)} | ${mark(r.console)} | ${admin} | ${cli} |`;
  });
  return [head, rule, ...rows].join('\n');
}
