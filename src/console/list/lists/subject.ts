import { html, type Html } from '../../html.js';
import type { ListContext } from '../spec.js';

/**
 * A task's or invoice's record as a join: `l` the lead it is for, `a` the application, `al` the application's lead.
 * The name is the person's for a lead, the case number and the person's for an application.
 */
export const subjectJoins = (alias: string) => `
    LEFT JOIN leads l ON l.tenant_id = ${alias}.tenant_id AND l.id = ${alias}.lead_id
    LEFT JOIN applications a ON a.tenant_id = ${alias}.tenant_id AND a.id = ${alias}.application_id
    LEFT JOIN leads al ON al.tenant_id = a.tenant_id AND al.id = a.lead_id`;

export const subjectSelect = (alias: string) => `CASE WHEN ${alias}.lead_id IS NOT NULL
    THEN coalesce(nullif(l.body->>'full_name', ''), 'erased person')
    ELSE coalesce(a.case_ref, '') || ' · ' || coalesce(nullif(al.body->>'full_name', ''), 'erased person') END`;

export const subjectPerson = (alias: string) => `coalesce(${alias}.lead_id, a.lead_id)`;

/** The record's name linked to its page. */
export function subjectCell(
  ctx: ListContext,
  ref: { lead_id?: string | null; application_id?: string | null },
  name: string,
): Html {
  const ws = `/console/w/${ctx.view.workspace.slug}`;
  return ref.lead_id
    ? html`<a href="${ws}/leads/${ref.lead_id}">${name}</a>`
    : html`<a href="${ws}/applications/${ref.application_id}">${name}</a>`;
}
