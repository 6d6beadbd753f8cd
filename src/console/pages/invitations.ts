import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { AppServices } from '../../bootstrap.js';
import type { TypedApp } from '../../http/typed-app.js';
import {
  answerInvitation,
  joinWithNewPassword,
  openInvitation,
  type InvitationOutcome,
  type OpenInvitation,
} from '../../identity/invitations.js';
import { pendingInvitationsOf, type Membership } from '../../identity/members.js';
import { findWorkspace } from '../../workspaces/repository.js';
import { frameOf, sendPage, signedInOf, type SignedIn } from '../context.js';
import { html, type Html } from '../html.js';
import { csrfField, notice, page } from '../layout.js';
import { newPasswordProblem } from '../../identity/new-password.js';
import { newPasswordFields, signIn } from './auth.js';

// Field schemas declared here until src/console/schemas.ts (the frame helper's) is on this branch.
const TokenParams = Type.Object({ token: Type.String({ pattern: '^[A-Za-z0-9_-]{1,100}$' }) });
const SlugParams = Type.Object({ slug: Type.String({ pattern: '^[a-z0-9][a-z0-9-]{1,62}$' }) });
const NoNul = (maxLength: number) => Type.String({ maxLength, pattern: '^[^\\u0000]*$' });
const CsrfOnly = Type.Object({ _csrf: Type.Optional(NoNul(200)) });
const NewPassword = Type.Object({ password: NoNul(1024), confirm: NoNul(1024) });

const TITLE = 'Your invitation';

function spentPage(request: FastifyRequest): string {
  return page(
    frameOf(request, TITLE),
    html`${notice('This invitation has been used, withdrawn or has expired. Ask for a new one.', 'alert')}
      <p><a href="/console">Your workspaces</a></p>`,
  );
}

function newAccountPage(request: FastifyRequest, token: string, open: OpenInvitation, error?: string): string {
  return page(
    frameOf(request, `Join ${open.workspace.name}`),
    html`<p>
        ${open.invitee.pending ? 'You are invited to' : 'You are a member of'} ${open.workspace.name} as
        ${open.invitee.role}. Choose the password of your new account (${open.account.email}).
      </p>
      <form method="post" action="/console/invitation/${encodeURIComponent(token)}">
        ${newPasswordFields({ password: error })}
        <button type="submit">Set my password and join</button>
      </form>`,
  );
}

/** A link of this workspace cannot set up an account that belongs to another one (openToThisWorkspace). */
function memberElsewherePage(request: FastifyRequest, open: OpenInvitation): string {
  return page(
    frameOf(request, TITLE),
    html`${notice(
        `Your account (${open.account.email}) belongs to another workspace too and is not set up yet. Set it up with ` +
          `the first link that workspace sends you, then sign in and open this link again to join ${open.workspace.name}.`,
        'alert',
      )}
      <p><a href="/console/sign-in">Sign in</a></p>`,
  );
}

/** "Join <workspace> as <role>?" for the signed-in account the invitation names. */
function answerForms(signedIn: SignedIn, action: string, what: Pick<Membership, 'workspace' | 'user'>): Html {
  const csrf = csrfField(signedIn.csrf);
  const name = what.workspace.name;
  return html`<form method="post" action="${action}/accept" class="inline">
      ${csrf}<button type="submit">Accept<span class="visually-hidden"> the invitation to ${name}</span></button>
    </form>
    <form method="post" action="${action}/decline" class="inline">
      ${csrf}<button type="submit" class="danger">
        Decline<span class="visually-hidden"> the invitation to ${name}</span>
      </button>
    </form>`;
}

/** An existing account's invitation: signed in as that account, the question; else what to do first. */
function existingAccountPage(
  request: FastifyRequest,
  token: string,
  open: OpenInvitation,
): { status: number; body: string } {
  const signedIn = request.signedIn;
  const title = `Join ${open.workspace.name} as ${open.invitee.role}?`;
  if (!signedIn)
    return {
      status: 200,
      body: page(
        frameOf(request, TITLE),
        html`<p>
            This invitation is for an account that exists already. Sign in with the email it was sent to, then open this
            link again, or answer it on your workspace list.
          </p>
          <p><a href="/console/sign-in">Sign in</a></p>`,
      ),
    };
  if (signedIn.session.account_id !== open.account.id)
    return {
      status: 403,
      body: page(
        frameOf(request, TITLE),
        html`${notice(
          'This invitation was sent to another email than the one you are signed in with. Sign out, then sign in with the email it was sent to.',
          'alert',
        )}`,
      ),
    };
  return {
    status: 200,
    body: page(
      frameOf(request, title),
      html`<p>${open.workspace.name} invites you (${open.account.email}) as ${open.invitee.role}.</p>
        ${answerForms(signedIn, `/console/invitation/${encodeURIComponent(token)}`, {
          workspace: open.workspace,
          user: open.invitee,
        })}`,
    ),
  };
}

/** Where an answer leads: the workspace list, saying what happened; or the page that says the link is spent. */
function afterAnswer(request: FastifyRequest, reply: FastifyReply, outcome: InvitationOutcome) {
  switch (outcome.type) {
    case 'joined':
      return reply.redirect(`/console?${new URLSearchParams({ joined: outcome.workspace.slug })}`, 303);
    case 'declined':
      return reply.redirect(`/console?${new URLSearchParams({ declined: outcome.workspace.slug })}`, 303);
    case 'spent':
    case 'existing_account':
    case 'member_elsewhere':
      return sendPage(reply, spentPage(request), 410);
  }
}

/** The invitations waiting for the signed-in account, with Accept and Decline (the workspace list shows them). */
export async function pendingInvitationsSection(services: AppServices, signedIn: SignedIn): Promise<Html | ''> {
  const pending = await pendingInvitationsOf(services.pool, signedIn.session.email);
  if (pending.length === 0) return '';
  return html`<section aria-labelledby="invitations">
    <h2 id="invitations">Invitations waiting for you</h2>
    <ul>
      ${pending.map(
        (p) =>
          html`<li>
            Join ${p.workspace.name} as ${p.user.role}?
            ${
              p.user.pending === 'sign_in'
                ? answerForms(signedIn, `/console/invitations/${p.workspace.slug}`, p)
                : html`Open the link in your invitation email to accept it.`
            }
          </li>`,
      )}
    </ul>
  </section>`;
}

/** What the workspace list says after an answer, from the stored workspace (nothing of the query is echoed). */
export async function answeredNotice(
  services: AppServices,
  email: string,
  query: { joined?: string; declined?: string },
): Promise<Html | string> {
  const slug = query.joined ?? query.declined;
  if (!slug || !/^[a-z0-9][a-z0-9-]{1,62}$/.test(slug)) return '';
  const workspace = await findWorkspace(services.pool, slug);
  const user = workspace?.settings.users.find((u) => u.email.toLowerCase() === email.toLowerCase());
  if (!workspace || !user) return '';
  if (query.joined && user.active && !user.pending) return notice(`You joined ${workspace.name} as ${user.role}.`);
  if (query.declined && !user.active) return notice(`You declined the invitation to ${workspace.name}.`);
  return '';
}

export function registerInvitationPages(app: TypedApp, services: AppServices): void {
  app.get(
    '/invitation/:token',
    { schema: { params: TokenParams }, config: { console: 'open' } },
    async (request, reply) => {
      const { token } = request.params;
      const open = await openInvitation(services, token);
      if (!open) return sendPage(reply, spentPage(request), 410);
      if (open.memberElsewhere) return sendPage(reply, memberElsewherePage(request, open), 409);
      if (!open.existingAccount) return sendPage(reply, newAccountPage(request, token, open));
      const answer = existingAccountPage(request, token, open);
      return sendPage(reply, answer.body, answer.status);
    },
  );

  // A new account only: the link never sets the password of an account that can sign in (joinWithNewPassword).
  app.post(
    '/invitation/:token',
    { schema: { params: TokenParams, body: NewPassword }, config: { console: 'open' } },
    async (request, reply) => {
      const { token } = request.params;
      const open = await openInvitation(services, token);
      if (!open) return sendPage(reply, spentPage(request), 410);
      if (open.memberElsewhere) return sendPage(reply, memberElsewherePage(request, open), 409);
      if (open.existingAccount) {
        const answer = existingAccountPage(request, token, open);
        return sendPage(reply, answer.body, answer.status === 200 ? 409 : answer.status);
      }
      const problem = await newPasswordProblem(
        services.pool,
        open.account.id,
        request.body.password,
        request.body.confirm,
      );
      if (problem) return sendPage(reply, newAccountPage(request, token, open, problem), 400);
      const outcome = await joinWithNewPassword(services, token, request.body.password);
      if (outcome.type === 'existing_account') {
        const answer = existingAccountPage(request, token, open);
        return sendPage(reply, answer.body, 409);
      }
      if (outcome.type === 'member_elsewhere') return sendPage(reply, memberElsewherePage(request, open), 409);
      if (outcome.type !== 'joined') return sendPage(reply, spentPage(request), 410);
      await signIn(services, request, reply, outcome.accountId);
      return afterAnswer(request, reply, outcome);
    },
  );

  for (const answer of ['accept', 'decline'] as const) {
    app.post(
      `/invitation/:token/${answer}`,
      { schema: { params: TokenParams, body: CsrfOnly }, config: { console: 'account' } },
      async (request, reply) => {
        const signedIn = signedInOf(request);
        const open = await openInvitation(services, request.params.token);
        if (!open) return sendPage(reply, spentPage(request), 410);
        if (open.account.id !== signedIn.session.account_id) {
          const page = existingAccountPage(request, request.params.token, open);
          return sendPage(reply, page.body, page.status);
        }
        const outcome = await answerInvitation(services, signedIn.session.account_id, {
          answer,
          token: request.params.token,
        });
        return afterAnswer(request, reply, outcome);
      },
    );

    app.post(
      `/invitations/:slug/${answer}`,
      { schema: { params: SlugParams, body: CsrfOnly }, config: { console: 'account' } },
      async (request, reply) => {
        const signedIn = signedInOf(request);
        const workspace = await findWorkspace(services.pool, request.params.slug);
        const outcome = workspace
          ? await answerInvitation(services, signedIn.session.account_id, { answer, workspaceId: workspace.id })
          : ({ type: 'spent' } as const);
        return afterAnswer(request, reply, outcome);
      },
    );
  }
}
