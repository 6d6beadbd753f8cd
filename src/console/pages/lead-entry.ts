import { randomBytes } from 'node:crypto';
import { Type } from 'typebox';
import type { AppServices } from '../../bootstrap.js';
import { enterLead } from '../../commands/leads/enter-lead.js';
import { isCommandError, type CommandError } from '../../commands/errors.js';
import { leadCreateProblems } from '../../http/lead-create-problems.js';
import { commandErrorAnswer } from '../../http/errors.js';
import type { TypedApp } from '../../http/typed-app.js';
import { findLead } from '../../projections/leads-queries.js';
import { sendPage, type MemberView } from '../context.js';
import { csrfField, field, choice, notice, page } from '../layout.js';
import { html, type Html } from '../html.js';
import { contextOf, textArea } from '../forms.js';
import { countryName, visaTypeName } from '../labels.js';
import { viewOf } from '../routes.js';
import { FormBody, Text, WorkspaceParams } from './record-schemas.js';
import { leadsBase } from './leads.js';

/*
 * A lead typed in by hand (a walk-in, a phone call): the form makes the POST /v1/leads body and the capture decides it
 * as it decides the API's (src/commands/leads/enter-lead.ts), so its refusals are the API's, shown by each field.
 */

/** The form's fields: each is the API's own field of the same name. */
const TEXT_FIELDS = [
  'full_name',
  'phone',
  'email',
  'city',
  'country_interest',
  'visa_type',
  'course',
  'message',
] as const;
type TextField = (typeof TEXT_FIELDS)[number];

const LABELS: Record<TextField | 'consent', string> = {
  full_name: 'Full name',
  phone: 'Phone',
  email: 'Email',
  city: 'City',
  country_interest: 'Country of interest',
  visa_type: 'Visa type',
  course: 'Course',
  message: 'What they asked about',
  consent: 'Consent',
};

/** A one-time key per form shown: 128 random bits, URL-safe. */
const newFormKey = () => randomBytes(16).toString('base64url');
const FORM_KEY = /^[A-Za-z0-9_-]{22}$/;

type Values = Partial<Record<TextField | 'consent' | 'form_key', string>>;

/** The POST /v1/leads body the form stands for: each field filled in as typed, an empty one left out. */
export function bodyOfForm(values: Values): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const name of TEXT_FIELDS) {
    const value = values[name]?.trim() ?? '';
    if (value !== '') body[name] = value;
  }
  body.full_name ??= '';
  body.consent = values.consent === 'yes';
  return body;
}

/** The API's refusal by the form's fields: each problem the API names by field, in the form's words. */
export function formErrors(error: CommandError): { status: number; errors: Record<string, string> } {
  const answer = commandErrorAnswer(error);
  const details = error.refusal === 'rule' ? (error.fields ?? {}) : {};
  const errors: Record<string, string> = {};
  for (const [name, text] of Object.entries(details)) {
    const label = Object.hasOwn(LABELS, name) ? LABELS[name as TextField] : null;
    if (label) errors[name] = `${label} ${text}.`;
    else errors.form = `${errors.form ? `${errors.form} ` : ''}${name.replaceAll('_', ' ')} ${text}.`;
  }
  if (error.refusal === 'rule' && error.code === 'consent_required')
    errors.consent = 'Tick the box once the person has agreed to be contacted about their enquiry.';
  if (Object.keys(errors).length === 0) errors.form = answer.message;
  return { status: answer.statusCode, errors };
}

interface FormState {
  values?: Values;
  errors?: Record<string, string>;
  /** The lead the person already had, when the last entry matched one. */
  duplicate?: { id: string; name: string };
}

function entryForm(view: MemberView, o: FormState): string {
  const s = view.workspace.settings;
  const v = o.values ?? {};
  const errors = o.errors ?? {};
  const text = (name: TextField, type = 'text', extra: { hint?: string; autocomplete?: string } = {}) =>
    field({ name, label: LABELS[name], type, value: v[name], error: errors[name], ...extra });
  const duplicate = o.duplicate
    ? html`<div class="notice" role="status">
        <p>
          This person already has a lead:
          <a href="${leadsBase(view)}/${o.duplicate.id}">${o.duplicate.name || 'their lead'}</a>. What you entered was
          added to it as an enquiry; no second lead was made.
        </p>
      </div>`
    : '';
  const body = html`${duplicate} ${errors.form ? notice(errors.form, 'alert') : ''}
    <p>
      For a walk-in or a phone call. The lead is checked and created as the API creates one: a person who already has a
      lead (same phone or email) gets this enquiry added to it instead.
    </p>
    <form method="post" action="${leadsBase(view)}/new" novalidate>
      ${csrfField(view.signedIn.csrf)}
      <input
        type="hidden"
        name="form_key"
        value="${v.form_key && FORM_KEY.test(v.form_key) ? v.form_key : newFormKey()}"
      />
      ${text('full_name', 'text', { autocomplete: 'off' })}
      ${text('phone', 'tel', { hint: `Without the country code, a ${countryName(s.default_phone_country)} number is assumed.`, autocomplete: 'off' })}
      ${text('email', 'email', { autocomplete: 'off' })} ${text('city')}
      ${choice({
        name: 'country_interest',
        label: LABELS.country_interest,
        options: s.countries.map((c) => [c, countryName(c)]),
        value: v.country_interest,
        empty: 'Not said',
        error: errors.country_interest,
      })}
      ${choice({
        name: 'visa_type',
        label: LABELS.visa_type,
        options: s.visa_types.map((t) => [t, visaTypeName(t)]),
        value: v.visa_type,
        empty: 'Not said',
        error: errors.visa_type,
      })}
      ${text('course')} ${textArea({ name: 'message', label: LABELS.message, value: v.message, error: errors.message })}
      <div class="field${errors.consent ? ' invalid' : ''}">
        <input
          id="f-consent"
          name="consent"
          type="checkbox"
          value="yes"
          ${v.consent === 'yes' ? html`checked` : ''}
          ${errors.consent ? html`aria-invalid="true" aria-describedby="f-consent-error"` : ''}
        />
        <label for="f-consent" class="inline">They agreed to be contacted about their enquiry</label>
        ${errors.consent ? html`<p class="error" id="f-consent-error">${errors.consent}</p>` : ''}
      </div>
      <button type="submit">Enter the lead</button>
    </form>`;
  return page(view.frame('New lead', 'Leads'), body as Html);
}

const EntryForm = FormBody({
  ...Object.fromEntries(TEXT_FIELDS.map((name) => [name, Type.Optional(Text(2_000))])),
  consent: Type.Optional(Text(10)),
  form_key: Type.Optional(Text(100)),
});

export function registerLeadEntryPages(app: TypedApp, services: AppServices): void {
  const creating = { console: { operation: 'leads.create' } } as const;
  app.get(
    '/w/:slug/leads/new',
    {
      schema: { params: WorkspaceParams, querystring: Type.Object({ duplicate: Type.Optional(Text(40)) }) },
      config: creating,
    },
    async (request, reply) => {
      const view = viewOf(request);
      const id = request.query.duplicate ?? '';
      const lead = /^[0-9a-f-]{36}$/.test(id) ? await findLead(services.pool, view.workspace.id, false, id) : undefined;
      return sendPage(reply, entryForm(view, { duplicate: lead ? { id: lead.id, name: lead.full_name } : undefined }));
    },
  );

  app.post(
    '/w/:slug/leads/new',
    { schema: { params: WorkspaceParams, body: EntryForm }, config: creating },
    async (request, reply) => {
      const view = viewOf(request);
      const values = request.body as Values;
      const formKey = values.form_key ?? '';
      if (!FORM_KEY.test(formKey))
        return sendPage(
          reply,
          entryForm(view, {
            values: { ...values, form_key: undefined },
            errors: { form: 'This form is out of date: check what it holds and send it again.' },
          }),
          400,
        );
      const body = bodyOfForm(values);
      try {
        const answer = await enterLead(services, {
          workspace: view.workspace,
          body,
          schemaProblems: leadCreateProblems(body),
          formKey,
          context: contextOf(view),
        });
        const id = String(answer.body.id);
        if (answer.body.duplicate === true) return reply.redirect(`${leadsBase(view)}/new?duplicate=${id}`, 303);
        return reply.redirect(`${leadsBase(view)}/${id}?done=entered`, 303);
      } catch (error) {
        if (!isCommandError(error)) throw error;
        const refused =
          error.refusal === 'idempotency_key_reused'
            ? {
                status: 409,
                errors: {
                  form: 'This form was sent already and made its lead: start a new form to enter someone else.',
                },
              }
            : formErrors(error);
        return sendPage(reply, entryForm(view, { values, errors: refused.errors }), refused.status);
      }
    },
  );
}
