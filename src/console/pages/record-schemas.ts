import { Type, type TProperties } from 'typebox';
import { Slug, Text as ConsoleText, Uuid } from '../schemas.js';

/*
 * The field shapes the records pages (leads, applications, tasks, invoices) declare their routes with, built on the
 * console's schemas (src/console/schemas.ts): a field of theirs may be sent empty, and a textarea keeps its newlines.
 */

export { Slug, Uuid };
/** Free text typed into a form: bounded, without NUL or other control characters (newlines and tabs kept). */
export const Text = (maxLength: number) => ConsoleText({ max: maxLength, min: 0, multiline: true });

export const WorkspaceParams = Type.Object({ slug: Slug });
export const RecordParams = Type.Object({ slug: Slug, id: Uuid });

const Csrf = Type.Optional(Text(200));
/** A form's body: its fields, each optional (a field absent from a form is never a change), and the CSRF token. */
export const FormBody = <P extends TProperties>(properties: P) => Type.Object({ ...properties, _csrf: Csrf });
export const CsrfOnly = FormBody({});

/** A query with a `done` message key, as every record page shows after a redirect. */
export const Done = Type.Optional(Type.String({ pattern: '^[a-z_]{1,30}$' }));
