import { Type, type TProperties } from 'typebox';

/*
 * The field schemas the records pages (leads, applications, tasks, invoices) declare their routes with. The shared
 * console schemas (src/console/schemas.ts) were not on this branch when these pages were converted: these are the
 * same shapes, to be replaced by imports from there.
 */

export const Slug = Type.String({ pattern: '^[a-z0-9][a-z0-9-]{1,62}$' });
export const Uuid = Type.String({ format: 'uuid' });
/** Free text typed into a form: bounded (NUL bytes and lone surrogates are refused by the edge checks). */
export const Text = (maxLength: number) => Type.String({ maxLength });

export const WorkspaceParams = Type.Object({ slug: Slug });
export const RecordParams = Type.Object({ slug: Slug, id: Uuid });

const Csrf = Type.Optional(Text(200));
/** A form's body: its fields, each optional (a field absent from a form is never a change), and the CSRF token. */
export const FormBody = <P extends TProperties>(properties: P) => Type.Object({ ...properties, _csrf: Csrf });
export const CsrfOnly = FormBody({});

/** A query with a `done` message key, as every record page shows after a redirect. */
export const Done = Type.Optional(Type.String({ pattern: '^[a-z_]{1,30}$' }));
