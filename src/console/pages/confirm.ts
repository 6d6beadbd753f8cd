import type { MemberView } from '../context.js';
import { html, type Html } from '../html.js';
import { csrfField, notice, page } from '../layout.js';

/**
 * The step before an action that cannot be taken back (docs/decisions.md, "Console confirmations"): a page of its own,
 * reached by a link or a GET form, that says what will happen and what cannot be undone, and holds the one form that
 * does it (with `confirm=yes`) beside the way back. Reloading it changes nothing.
 */
export function confirmPage(
  view: MemberView,
  o: {
    title: string;
    current: string;
    /** What will happen, in the words of the work. */
    consequence: Html | string;
    action: string;
    fields?: Record<string, string>;
    /** Inputs the member fills in before confirming (the password a recent sign-in asks for). */
    inputs?: Html | '';
    button: string;
    back: string;
    error?: string;
  },
): string {
  return page(
    view.frame(o.title, o.current),
    html`${o.error ? notice(o.error, 'alert') : ''}
      <p>${o.consequence}</p>
      <form method="post" action="${o.action}" class="confirm">
        ${csrfField(view.signedIn.csrf)}
        ${Object.entries(o.fields ?? {}).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}" />`)}
        <input type="hidden" name="confirm" value="yes" />
        ${o.inputs ?? ''}
        <button type="submit" class="danger">${o.button}</button>
        <a href="${o.back}">Cancel, change nothing</a>
      </form>`,
  );
}
